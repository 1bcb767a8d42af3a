# SPDX-License-Identifier: MIT
# The ntb fabric's vm suite, the guests' side (run-ntb.sh runs it with
# SIO_NTB_SUITE): three guests, ports 0 1 2 of an NTB of ntb_hw_ivshmem, one
# fabric of backend ntb on smartio_ntb, each kernel a node, with its node
# service (smartio ntb serve). Guest 0 hosts the fabric's state and lends
# QEMU's NVMe (vfio with VT-d; sio.lend=uio: uio_pci_generic without an
# IOMMU) and runs nvme-manager; guests 1 and 2 are its clients.
#
#   the core     segments made on one node and read on another (each node's
#                memory through the windows), a notification that wakes a
#                waiter of another kernel through the NTB doorbell, an event
#                that reaches another kernel
#   the NVMe     a multicast Identify whose subscribers are guests 0, 1 and 2;
#                nvme-identify and verified nvme-client I/O from 1 and 2 at
#                once, with each borrow's doorbell path labelled (relayed:
#                ntb_hw_ivshmem refuses a window onto the NVMe's BAR0)
#   faults       guest 1 stopped mid-I/O (its link goes down and comes back,
#                held down in the fabric's state 2 s more: its client pauses,
#                maps its windows again, resends and goes on, the report and
#                smartio nvme stats count the flap, and guest 0 reads back
#                every block of its range; a client beside it whose grace is
#                500 ms fails with the link's error; a new client after it,
#                verified); guest 2 killed mid-I/O (guest 1
#                goes on, the manager reclaims guest 2's queues); guest 1
#                reset and rejoining as a new kernel on its port (its
#                nvme-identify and a verified client); guest 0's
#                nvme-manager killed and a standby in guest 1 taking over
#                under verified I/O; then fio with the smartio engine in
#                guest 1, data verified; guest 1 stopped 4 s again, its
#                manager (away from the lender) rides it out under a
#                client's I/O, no reset; guest 0 disables the controller
#                behind that manager's back: away from the lender it cannot
#                reset it (BAR0 relayed), and stops with its state kept,
#                naming node 0, where a manager then serves a verified
#                client of guest 1; guest 0's nvme driver reads the
#                clients' blocks back; dmesg clean everywhere.
# Two guests (run-ntb.sh's SIO_NTB_GUESTS=2, sio.guests=2 here; a
# two-port profile such as sio.profile=intel, one peer): guest 1 makes its
# segments in its own memory and in guest 0's, guest 0 reads both; guest 1
# waits for the doorbell and for the event both; the multicast Identify
# has two subscribers; no guest is killed: guest 1's borrow is held while
# guest 0 reads its label (client-long), and the readback is guest 1's
# range alone. The "@3" wants (and host's kill-2) are the third guest's.
# The vfio variant only: uio's and barfwd's want the third guest.
# The uio variant (sio.lend=uio) keeps the core, the NVMe and the kill, and
# boots guest 2 again once the manager has reclaimed its queues: back on its
# port as a new kernel, it rejoins and runs nvme-identify and a verified
# client, whose blocks guest 0's kernel reads back too; and it
# loads ntb_hw_ivshmem with page_xlat=1 in guests 0 and 1 (translations page
# by page, as NTB hardware's; guest 2 keeps the default, whole regions):
#   own windows  guest 1 connects to a segment of guest 0 through a window of
#                its own (the connection's info and smartio status say so),
#                the window is the segment's 64 KiB (a mapping past it is
#                refused), guest 1's stores land in it and not in the
#                neighbouring segment (guest 0 checks both), the window is
#                freed after the disconnect; guest 2's segment is reached
#                through the pool window, said with why; each node service
#                says its mode.
# The barfwd variant (sio.variant=barfwd, short: the core, the NVMe, the
# QD1 reads) lends through vfio with ntb_hw_ivshmem's bar_fwd=1 (and
# page_xlat=1, which aligns a translation to a page) in guest 0:
# the lender's windows onto BAR0 are accepted, as an emulated translation,
# so guests 1 and 2 store their doorbells through their outbound windows and
# no relay forwards them (its counters stay 0 across guest 1's reads); the
# lender, the clients, smartio status and smartio nvme stats say "NTB
# window (emulated forwarding)". Then the NVMe is removed from guest 0's
# kernel under guest 1's reads: the lender gives it back (vfio's device
# request) and says why, guest 1's client ends with an error.
#
# host-vfio: reset-1 flap-1 flap-1b
# host-vfio@3: kill-2
# host-uio: kill-2 join
# want: g0:load g1:load g0:serve g1:serve g0:fabric-create
# want: g1:fabric-join g0:seg-across g1:seg-across
# want: g1:doorbell-wake g0:lend g0:lend-labelled
# want: g0:mcast-identify g0:mcast-subscriber g1:mcast-subscriber g0:manager
# want: g1:identify g1:client-write-verify
# want: g1:doorbells-labelled g0:status-labelled
# want: g0:qd1-local g1:qd1-remote g0:dmesg g1:dmesg
# want@3: g2:load g2:serve g2:fabric-join g2:seg-across g2:event-across
# want@3: g2:mcast-subscriber g2:identify g2:client-write-verify g2:doorbells-labelled
# want@2: g1:event-across
# want-vfio: g1:relay-counted g0:readback-client1
# want-vfio@3: g1:client-across-the-kill g0:dead-client-reclaimed host:guest2-killed
# want-vfio@3: g0:readback-client2
# want-vfio@2: g1:client-long
# want-uio: g1:relay-counted
# want-uio: g1:client-across-the-kill g0:dead-client-reclaimed host:guest2-killed
# want-uio: g0:readback-client1 g0:readback-client2
# want-barfwd: g1:relay-idle g1:stats-labelled g1:client-held g1:relay-idle-held g2:dmesg
# want-barfwd: g0:device-removed g0:lend-given-back g1:client-ended
# want-vfio: g1:flap-prefill g1:flap-ridden g1:flap-stats g1:flap-past-grace g0:flap-range-verified
# want-vfio: g1:client-after-flap g0:flap-seen host:guest1-flapped
# want-vfio@3: g2:flap-seen
# want-vfio: host:guest1-reset g1:restarted g1:rejoin g1:identify-after-rejoin g1:client-after-rejoin
# want-vfio: g0:reset-seen
# want-vfio: g1:standby-took-over g1:client-across-takeover g1:fio-verify
# want-vfio: g1:client-across-mgr-flap g1:client-after-mgr-flap g1:manager-rode-flap
# want-vfio: g0:mgr-flap-seen host:guest1-flapped-again
# want-vfio: g0:cc-off g1:manager-hands-over g0:manager-after-hand-over
# want-vfio: g1:client-after-hand-over
# want-uio: g2b:restarted g2b:serve g2b:rejoin g2b:identify-after-rejoin g2b:client-after-rejoin
# want-uio: g2b:dmesg g0:readback-client2b
# want-uio: g0:xlat-mode g1:xlat-mode g2:xlat-mode g1:xlat-own-window g1:xlat-pool-window
# want-uio: g0:xlat-data-isolated
# want-bar64: g0:bar64 g1:bar64 g2:bar64
. /vm/guest.sh	# res, ok, no, run, until_ok, measure, readback_clients, ...
FAB=ntbfab
MOD=/lib/modules
MAIN=0000:00:04.0			# QEMU's NVMe (guest 0 only)
G=$(sed -n 's/.*sio\.guest=\([0-9]*\).*/\1/p' /proc/cmdline)
LEND=$(sed -n 's/.*sio\.lend=\([a-z]*\).*/\1/p' /proc/cmdline)
LEND=${LEND:-vfio}
# the barfwd variant: guest 0's NTB emulates the translation onto BAR0
BARFWD=$(sed -n 's/.*sio\.variant=[a-z0-9,]*barfwd.*/1/p' /proc/cmdline)
# the doorbell path every label says: relayed, or the emulated window
if [ -n "$BARFWD" ]; then PATHWORDS='NTB window (emulated forwarding)'; else
	PATHWORDS='relayed (no window: Operation not supported)'; fi
export SMARTIO_FABRIC_BACKEND=ntb SMARTIO_FABRIC=$FAB SMARTIO_QUIET=1
# a stop of a few seconds (a link that flaps) is no death: the lease outlasts it
export SMARTIO_SHMWIN_LEASE_MS=12000 SMARTIO_NVME_RESTART_MS=60000
# A holder of the registry lock in a guest that TCG on a loaded host gives
# a tenth of a CPU keeps it for seconds (as in the storm): the standby
# manager gave up at the default 5 s once, on intel with two guests, with
# a client of the take-over holding it alive.
export SMARTIO_LOCK_TIMEOUT_MS=20000
n=0

# a step that hangs is named with where it hangs, then killed, long before
# the host's limit (run, in /vm/guest.sh)
RUN_LIMIT=240
. /vm/ntb-sync.sh	# phase, hello: the host's phases
. /vm/ntb-fabric.sh	# load, serve, serve_log, client, lend, relay_counters, relay_share
# the NTB's port numbers, so the nodes, of guests 1 and 2 (sio.profile=idt:
# the chip's; the driver's log says the ivshmem ids, 1 and 2)
case $(sed -n 's/.*sio\.profile=\([a-z]*\).*/\1/p' /proc/cmdline) in
idt) P1=2 P2=4 ;;
*) P1=1 P2=2 ;;
esac
# two guests (a two-port profile): no guest 2, so no node P2
TWO=$(sed -n 's/.*sio\.guests=2\( .*\)*$/1/p' /proc/cmdline)
NODES=$((P2 + 1)) SUBS=3 PEERS=2
if [ -n "$TWO" ]; then
	NODES=$((P1 + 1)) SUBS=2 PEERS=1 PORTS=2
	[ "$LEND" = vfio ] || { no two-guests "the $LEND variant needs a third guest"; exit 0; }
fi

load
if grep -q 'sio.join' /proc/cmdline; then
	# -- guest 2 booted again after its kill: a new kernel on its old port,
	# once the manager reclaimed its queues (guest 0 checked it before this)
	dmesg | grep -q 'restarted: its slot still holds' && [ "$ME" = 2 ] && ok restarted ||
		no restarted "port ${ME:-none}: not port 2's slot of the killed guest"
	hello
	serve 2
	phase join
	until_ok 60 smartio status $FAB && ok rejoin || no rejoin "$(cat /tmp/until)"
	until_ok 60 nvme-identify --fabric $FAB && ok identify-after-rejoin ||
		no identify-after-rejoin "$(cat /tmp/until)"
	client client-after-rejoin --lba 7168 --count 256 --bs 4k --qd 2 --pattern 0xd4 --flush
	phase rejoined
	dmesg_check dmesg
	serve_log
	kill $spid; wait $spid
	exit 0
fi
if dmesg | grep -q 'restarted: its slot still holds'; then
	# -- guest 1 after its reset: a new kernel on its old port, back in the fabric
	ok restarted
	hello
	serve 1
	until_ok 60 smartio status $FAB && ok rejoin || no rejoin "$(cat /tmp/until)"
	serve_log
	phase reset-back
	until_ok 60 nvme-identify --fabric $FAB && ok identify-after-rejoin ||
		no identify-after-rejoin "$(cat /tmp/until)"
	client client-after-rejoin --lba 5120 --count 256 --bs 4k --qd 2 --pattern 0xc3 --flush
	phase takeover
	nvme-manager --fabric $FAB --standby --ready-file /tmp/mgr.ready >/tmp/mgr.log 2>&1 &
	mpid=$!
	until_ok 30 grep -q . /tmp/mgr.log
	phase mgr-kill
	client client-across-takeover --lba 6144 --count 512 --bs 4k --qd 2 --random --time 20
	until_ok 90 test -s /tmp/mgr.ready && ok standby-took-over ||
		{ sed 's/^/    | /' /tmp/mgr.log; ps | sed 's/^/    | ps: /'
		  no standby-took-over "the standby never served"; }
	run fio-verify fio --name=v --ioengine=external:/prog/fio-smartio.so \
		--rw=randwrite --bs=4k --iodepth=4 --offset=16m --size=1m --verify=crc32c \
		--do_verify=1 --verify_fatal=1
	phase end-io
	# this guest stopped 4 s while its manager serves from away from the
	# lender, under a client's I/O: the manager reads all ones across the
	# flap, its admin queue too (it lies on the lender), and rides it out:
	# no admin command lost, no reset; a client after it is served
	client client-across-mgr-flap --lba 6912 --count 128 --bs 4k --qd 2 --random --time 8 &
	phase flap-1b
	wait $!
	client client-after-mgr-flap --lba 6912 --count 128 --bs 4k --qd 2 --pattern 0xe7 --flush
	! grep -qE "got no completion|resetting device|controller failed" /tmp/mgr.log &&
		ok manager-rode-flap || { sed 's/^/    | /' /tmp/mgr.log; no manager-rode-flap; }
	phase mgr-flap-checked
	# this manager, away from the lender, cannot reset the controller (its
	# BAR0 is relayed: doorbells only); disabled behind its back, it stops
	# with its state kept and names the lender's node, without a try
	phase hand-over
	until_ok 60 sh -c 'grep -q "cannot do (its BAR0 is relayed" /tmp/mgr.log &&
		grep -q "state kept for a manager on node 0" /tmp/mgr.log' &&
		! grep -q "did not come back" /tmp/mgr.log && ok manager-hands-over ||
		{ sed 's/^/    | /' /tmp/mgr.log; no manager-hands-over; }
	wait $mpid
	phase handed-over
	phase mgr-back
	client client-after-hand-over --lba 6656 --count 256 --bs 4k --qd 2 --pattern 0xe6 --flush
	sed 's/^/    | /' /tmp/mgr.log
	phase mgr-stopped
	dmesg_check dmesg
	serve_log
	phase done
	kill $spid; wait $spid
	exit 0
fi

serve $PEERS
phase serve
case $G in
0)	run fabric-create smartio create $FAB --nodes $NODES ;;
*)	until_ok 60 smartio status $FAB && ok fabric-join || no fabric-join "$(cat /tmp/until)" ;;
esac
phase fabric

# -- the core across kernels: segments in each node's memory, made by one
# kernel (into its own memory, or another's through a window), read by another
# (two guests: guest 1 makes them in its memory and guest 0's, guest 0
# reads both, guest 1 reads one guest 0 made)
case $G$TWO in
1)	run seg-make sh -c "ntb-fabric seg-make $P1 101 0x11 && ntb-fabric seg-make $P2 102 0x12" ;;
2)	run seg-make ntb-fabric seg-make 0 103 0x13 ;;
11)	run seg-make sh -c "ntb-fabric seg-make $P1 101 0x11 && ntb-fabric seg-make 0 102 0x12" ;;
01)	run seg-make ntb-fabric seg-make 0 103 0x13 ;;
esac
phase seg-made
case $G$TWO in
0)	run seg-across ntb-fabric seg-check $P1 101 0x11 ;;
1|11)	run seg-across ntb-fabric seg-check 0 103 0x13 ;;
2)	run seg-across ntb-fabric seg-check $P2 102 0x12 ;;
01)	run seg-across sh -c "ntb-fabric seg-check $P1 101 0x11 && ntb-fabric seg-check 0 102 0x12" ;;
esac
# a waiter in guest 1 woken by guest 0 (the NTB doorbell), an event to
# guest 2 (two guests: to guest 1 too)
case $G in
1)	ntb-fabric wait 201 >/tmp/wait.log 2>&1 & wpid=$!
	[ -z "$TWO" ] || { ntb-fabric event-wait 0 >/tmp/ev.log 2>&1 & epid=$!; } ;;
2)	ntb-fabric event-wait 0 >/tmp/ev.log 2>&1 & wpid=$! ;;
esac
if [ -n "$TWO" ] && [ "$G" = 1 ]; then
	until_ok 30 sh -c 'grep -q "waiting" /tmp/wait.log && grep -q "listening" /tmp/ev.log'
else
	until_ok 30 sh -c 'grep -q "waiting\|listening" /tmp/wait.log /tmp/ev.log 2>/dev/null || [ '"$G"' = 0 ]'
fi
phase listening
if [ "$G" = 0 ]; then
	ntb-fabric notify $P1 201 | sed 's/^/    | /'
	smartio link $FAB 0 down && smartio link $FAB 0 up
fi
case $G in
1)	wait $wpid && ok doorbell-wake || no doorbell-wake "not woken through the doorbell"
	sed 's/^/    | /' /tmp/wait.log
	if [ -n "$TWO" ]; then
		wait $epid && ok event-across || no event-across "no event"
		sed 's/^/    | /' /tmp/ev.log
	fi ;;
2)	wait $wpid && ok event-across || no event-across "no event"
	sed 's/^/    | /' /tmp/ev.log ;;
esac
phase core-done

# -- a segment's own window where the driver translates page by page (uio variant)
if [ "$LEND" = uio ]; then
	if [ "$G" = 2 ]; then mode="segments: pool window"; else mode="segments: own windows"; fi
	grep -q "$mode" /tmp/serve.log && ok xlat-mode ||
		{ serve_log; no xlat-mode "the node service did not say '$mode'"; }
	case $G in
	0)	run xlat-made sh -c 'ntb-fabric seg-make 0 301 0xa5 && ntb-fabric seg-make 0 302 0xb6' ;;
	2)	run xlat-made ntb-fabric seg-make 2 303 0xc7 ;;
	esac
	phase xlat-made
	[ "$G" = 1 ] && run xlat-own-window ntb-fabric xlat-check 0 301 0xa5 own &&
		run xlat-pool-window ntb-fabric xlat-check 2 303 0xc7 pool
	phase xlat-checked
	# guest 1's stores in the segment, none in its neighbour
	[ "$G" = 0 ] && run xlat-data-isolated sh -c 'ntb-fabric seg-check 0 301 0x5a && ntb-fabric seg-check 0 302 0xb6'
fi

# -- the NVMe of guest 0, lent across the NTB
if [ "$G" = 0 ]; then
	[ $LEND = uio ] && { mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages; }
	lend
fi
phase lent
case $G in
0)	# a subscriber in this kernel too, beside the issuer
	nvme-mcast-identify --fabric $FAB --subscribe 0 >/tmp/sub.log 2>&1 &
	subpid=$!
	# three subscribers (two guests: two): the fabric's nodes are the NTB's port numbers
	# (idt: 0 to 4, of which 1 and 3 have no kernel)
	run mcast-identify nvme-mcast-identify --fabric $FAB --device $dev --external --local-subscriber --subscribers $SUBS
	wait $subpid && ok mcast-subscriber || no mcast-subscriber "$(cat /tmp/sub.log)"
	sed 's/^/    | /' /tmp/sub.log
	nvme-manager --fabric $FAB --device $dev --ready-file /tmp/mgr.ready >/tmp/mgr.log 2>&1 &
	mpid=$!
	until_ok 120 test -s /tmp/mgr.ready && ok manager || { cat /tmp/mgr.log; no manager; } ;;
*)	run mcast-subscriber nvme-mcast-identify --fabric $FAB --subscribe 0 ;;
esac
phase served
if [ "$G" != 0 ]; then
	until_ok 60 nvme-identify --fabric $FAB && ok identify || no identify "$(cat /tmp/until)"
	if [ "$G" = 1 ]; then lba=0 pat=0xa1; else lba=1024 pat=0xb2; fi
	client client-write-verify --lba $lba --count 256 --bs 4k --qd 4 --pattern $pat --flush
	grep -qF "BAR0 $PATHWORDS" /tmp/out && ok doorbells-labelled ||
		no doorbells-labelled "the client did not say its doorbells' path: $PATHWORDS"
fi
phase io
if [ "$G" = 0 ]; then
	run qd1-local nvme-client --fabric $FAB --op read --lba 0 --count 256 --bs 4k --qd 1 \
		--ios 1000 --timeout 20000 && measure qd1-local
fi
phase qd1-local
# guest 1's QD1 reads, every doorbell relayed, and the relay's part of them
# (barfwd: none relayed)
if [ "$G" = 1 ]; then
	before=$(relay_counters)
	run qd1-remote nvme-client --fabric $FAB --op read --lba 0 --count 256 --bs 4k --qd 1 \
		--ios 2000 --timeout 20000 && measure qd1-remote
	after=$(relay_counters)
	if [ -n "$BARFWD" ]; then
		[ "$after" = "0 0 0" ] && ok relay-idle ||
			no relay-idle "the relay forwarded doorbells: '$before' before, '$after' after"
	else
		relay_share "$before" "$after" 2000 && ok relay-counted ||
			no relay-counted "smartio status shows no relay counters that moved: '$before'"
	fi
fi
phase qd1-remote
if [ -n "$BARFWD" ]; then
	# a borrow of guest 1 held (40 s) while guest 0's smartio status and
	# guest 1's smartio nvme stats look at its path (30 s at most)
	if [ "$G" = 1 ]; then
		nvme-client --fabric $FAB --op read --lba 0 --count 256 --bs 4k --qd 1 --time 40 \
			--timeout 20000 >/tmp/held.log 2>&1 &
		hpid=$!
	fi
	phase held
	case $G in
	0)	until_ok 30 sh -c "smartio status $FAB | grep -qF 'on node $P1, doorbells $PATHWORDS'" &&
			ok status-labelled || no status-labelled "smartio status shows no borrow's doorbell path"
		smartio status $FAB | sed 's/^/    | /' ;;
	1)	until_ok 30 sh -c "smartio nvme stats $FAB | grep -qF '$PATHWORDS'" &&
			ok stats-labelled || no stats-labelled "smartio nvme stats does not say '$PATHWORDS'"
		smartio nvme stats $FAB | sed 's/^/    | /' ;;
	esac
	phase held-checked
	if [ "$G" = 1 ]; then
		wait $hpid && ok client-held || no client-held "exit $?"
		sed 's/^/    | /' /tmp/held.log
		after=$(relay_counters)
		[ "$after" = "0 0 0" ] && ok relay-idle-held ||
			no relay-idle-held "the relay forwarded doorbells: '$after'"
	fi
	phase held-done		# the lender stays until the borrow ends
	# the NVMe removed from guest 0's kernel while guest 1 reads through
	# the window onto its BAR0: the kernel asks vfio's user for it back,
	# the lender gives it back and says why, the forwarding drops the
	# stores, guest 1's client ends with an error instead of hanging
	if [ "$G" = 1 ]; then
		nvme-client --fabric $FAB --op read --lba 0 --count 256 --bs 4k --qd 1 --time 60 \
			--timeout 10000 >/tmp/gone.log 2>&1 &
		gpid=$!
		sleep 2
	fi
	phase remove
	if [ "$G" = 0 ]; then
		if timeout 60 sh -c "echo 1 >/sys/bus/pci/devices/$MAIN/remove"; then
			ok device-removed
		else
			no device-removed "the removal did not end in 60 s: the lender kept the function"
		fi
		t=0
		while kill -0 $lpid 2>/dev/null && [ $t -lt 30 ]; do sleep 1; t=$((t + 1)); done
		wait $lpid && r=0 || r=$?
		grep -q "the kernel asks for $MAIN back" /tmp/lend.log && [ $r != 0 ] &&
			ok lend-given-back || no lend-given-back "lender exit $r, no reason in its log"
		sed 's/^/    | /' /tmp/lend.log
	fi
	phase removed
	if [ "$G" = 1 ]; then
		t=0
		while kill -0 $gpid 2>/dev/null && [ $t -lt 90 ]; do sleep 1; t=$((t + 1)); done
		if kill -0 $gpid 2>/dev/null; then
			no client-ended "still running 90 s after the device was removed"
			kill -9 $gpid
		fi
		wait $gpid && r=0 || r=$?
		[ $r != 0 ] && [ $r != 137 ] && ok client-ended || no client-ended "exit $r"
		sed 's/^/    | /' /tmp/gone.log
	fi
	phase removed-checked
	# the short variant ends here: the rest is the relayed variants'
	[ "$G" = 0 ] && sed 's/^/    | /' /tmp/mgr.log
	dmesg_check dmesg
	serve_log
	[ "$G" = 0 ] && { kill $mpid; wait $mpid; }
	phase barfwd-end
	smartio destroy $FAB --force >/dev/null 2>&1
	kill $spid; wait $spid
	exit 0
fi

if [ "$LEND" = vfio ]; then
	# -- guest 1 stopped for a while, mid-I/O: its link goes and comes back.
	# The flap client's range holds its pattern in every block first, so
	# that guest 0 checks all of it afterwards; a second client, whose
	# grace is 500 ms, runs beside it
	if [ "$G" = 1 ]; then
		client flap-prefill --op write --lba 2048 --count 512 --bs 4k --qd 4
		nvme-client --fabric $FAB --lba 2048 --count 512 --bs 4k --qd 2 --random \
			--time 30 --timeout 60000 >/tmp/flap.log 2>&1 & fpid=$!
		SMARTIO_NVME_LINK_GRACE_MS=500 nvme-client --fabric $FAB --lba 2560 --count 256 \
			--bs 4k --qd 2 --random --time 30 --timeout 60000 >/tmp/grace.log 2>&1 & gpid=$!
		# both at their I/O (a queue pair each) before the stop
		until_ok 60 sh -c "[ \$(smartio nvme stats --fabric $FAB | awk '\$1 == $P1' | wc -l) -ge 2 ]" ||
			no flap-clients "the two clients did not both start: $(cat /tmp/until)"
	fi
	# guest 0: the link's messages so far, to wait for the flap's own
	downs=$(dmesg | grep -c "link with port 1 down") ups=$(dmesg | grep -c "link with port 1 up")
	phase flap-1
	case $G in
	1)	# the client pauses while the link is down, maps its windows
		# again at the link's new generation, has its queue pair made
		# again and resends what was in flight: no error, no block that
		# mismatches; smartio nvme stats counts the flap while it runs
		until_ok 60 sh -c "smartio nvme stats --fabric $FAB | grep -q '[1-9][0-9]* link flap(s) ridden out'" &&
			ok flap-stats || { smartio nvme stats --fabric $FAB | sed 's/^/    | /'
				no flap-stats "smartio nvme stats counts no link flap"; }
		smartio nvme stats --fabric $FAB | grep 'link flap' | sed 's/^/    | /'
		wait $fpid && r=0 || r=$?
		sed 's/^/    | /' /tmp/flap.log
		signalled $r
		if [ $r = 0 ] && grep -q 'mismatches 0 ' /tmp/flap.log &&
		   grep -q 'link flaps ridden out [1-9]' /tmp/flap.log; then
			ok flap-ridden
			sed -n 's/.*link flaps ridden out \([0-9]*\), paused \([0-9.]*\) ms.*/SIO-VM MEASURE flap-pause: \1 flap(s) ridden out, paused \2 ms once the link was seen down (TCG)/p' /tmp/flap.log
			sed -n -e 's/^ *write .* max \([0-9.]*\)$/SIO-VM MEASURE flap-longest-write: \1 us (TCG, by the guest clock, which the stop holds)/p' \
				-e 's/^ *read .* max \([0-9.]*\)$/SIO-VM MEASURE flap-longest-read: \1 us (TCG, by the guest clock, which the stop holds)/p' /tmp/flap.log
		else
			no flap-ridden "exit $r, an error, a mismatch or no flap counted"
		fi
		# the link was down longer than its grace: the clear error
		wait $gpid && r=0 || r=$?
		sed 's/^/    | /' /tmp/grace.log
		signalled $r
		if [ $r != 0 ] && ! grep -q 'mismatches [1-9]' /tmp/grace.log &&
		   grep -q 'has been down for over 500 ms (\$SMARTIO_NVME_LINK_GRACE_MS)' /tmp/grace.log; then
			ok flap-past-grace
		else
			no flap-past-grace "exit $r, without the link's error or with a mismatch"
		fi ;;
	0)	# the link held down in the fabric's state too, from the NTB's
		# loss until 2 s after it came back: longer than the grace of one
		# client, not of the other
		until_ok 60 sh -c "[ \$(dmesg | grep -c 'link with port 1 down') -gt $downs ]" &&
			smartio link $FAB $P1 down
		until_ok 60 sh -c "[ \$(dmesg | grep -c 'link with port 1 up') -gt $ups ]" &&
			ok flap-seen || no flap-seen "port 1's link did not go down and up"
		sleep 2
		smartio link $FAB $P1 up ;;
	2)	until_ok 60 sh -c 'dmesg | grep -q "link with port 1 down" && dmesg | grep -q "link with port 1 up"' &&
			ok flap-seen || no flap-seen "port 1's link did not go down and up" ;;
	esac
	phase flap-done
	# every block of the flap client's range, read back in guest 0 (no NTB
	# on the way): each holds the client's pattern, every write of which
	# it reported done, where it wrote it
	[ "$G" = 0 ] && client flap-range-verified --op verify --lba 2048 --count 512 --bs 4k --qd 4
	phase flap-checked
	# once the link is back: a new borrow, verified
	[ "$G" = 1 ] && client client-after-flap --lba 2048 --count 256 --bs 4k --qd 2 --pattern 0x5a --flush
	phase after-flap
fi

# -- guest 2 killed mid-I/O: guest 1 goes on, the manager reclaims guest 2's
# queues (two guests: guest 1's borrow held while guest 0 reads its label)
if [ -n "$TWO" ]; then
	phase held-1
	case $G in
	1)	client client-long --lba 3072 --count 1024 --bs 4k --qd 2 --random --time 15 ;;
	0)	until_ok 30 sh -c "smartio status $FAB | grep -qF 'on node $P1, doorbells $PATHWORDS'" &&
			ok status-labelled || no status-labelled "smartio status shows no borrow's doorbell path"
		smartio status $FAB | sed 's/^/    | /' ;;
	esac
	phase held-1-done
else
	if [ "$G" = 2 ]; then
		nvme-client --fabric $FAB --lba 4096 --count 2048 --bs 4k --qd 4 --random --time 120 \
			>/dev/null 2>&1 &
		sleep 2
	fi
	phase kill-2
	case $G in
	2)	sleep 300; no still-alive "guest 2 should have been killed"; exit 0 ;;
	1)	client client-across-the-kill --lba 3072 --count 1024 --bs 4k --qd 2 --random --time 15 ;;
	0)	# guest 1's borrow, held for 15 s, labelled with its doorbell path
		until_ok 30 sh -c "smartio status $FAB | grep -qF 'on node $P1, doorbells $PATHWORDS'" &&
			ok status-labelled || no status-labelled "smartio status shows no borrow's doorbell path"
		smartio status $FAB | sed 's/^/    | /'
		until_ok 90 grep -q "node $P2.*is gone" /tmp/mgr.log && ok dead-client-reclaimed ||
			{ sed 's/^/    | /' /tmp/mgr.log; no dead-client-reclaimed "the manager never deleted guest 2's queues"; } ;;
	esac
	phase killed
fi

if [ "$LEND" = vfio ]; then
	# -- guest 1 reset in place: a new kernel on its port rejoins (see the top);
	# then guest 0's manager is killed and guest 1's standby takes over
	phase reset-1
	[ "$G" = 1 ] && { sleep 300; no still-alive "guest 1 should have been reset"; exit 0; }
	# down once when it was stopped, again now
	until_ok 90 sh -c '[ $(dmesg | grep -c "link with port 1 down") -ge 2 ]' &&
		ok reset-seen || no reset-seen "port 1 did not go"
	phase reset-back
	phase takeover
	phase mgr-kill
	sleep 3	# the standby waits, guest 1's client starts: then the manager dies
	kill -KILL $mpid
	wait $mpid 2>/dev/null
	phase end-io
	downs=$(dmesg | grep -c "link with port 1 down")
	phase flap-1b
	until_ok 60 sh -c "[ \$(dmesg | grep -c 'link with port 1 down') -gt $downs ]" &&
		ok mgr-flap-seen || no mgr-flap-seen "port 1's link did not go down"
	phase mgr-flap-checked
	# guest 1's manager has the device: disable it behind its back
	phase hand-over
	run cc-off ntb-fabric cc-off $dev
	phase handed-over
	rm -f /tmp/mgr.ready
	nvme-manager --fabric $FAB --device $dev --ready-file /tmp/mgr.ready >>/tmp/mgr.log 2>&1 &
	mpid=$!
	until_ok 120 test -s /tmp/mgr.ready && ok manager-after-hand-over ||
		{ sed 's/^/    | /' /tmp/mgr.log; no manager-after-hand-over; }
	phase mgr-back
	phase mgr-stopped
	kill $mpid; wait $mpid
else
	# guest 2 boots again (run-ntb.sh, at this phase) and borrows anew;
	# guest 1 stays until then: its port is not free for guest 2 to take
	phase join
	phase rejoined
	[ "$G" = 1 ] && { links_new; dmesg_check dmesg; exit 0; }
	kill $mpid; wait $mpid
fi

# -- guest 0's own nvme driver reads the clients' blocks back
sed 's/^/    | /' /tmp/mgr.log
kill $lpid; wait $lpid
run unbind smartio $LEND unbind $MAIN
blk=$(kernel_nvme_blk $MAIN)
readback_clients "$blk" $PEERS
if [ "$LEND" = uio ]; then
	head -c $((256 * 512)) /dev/zero | tr '\0' '\324' >/tmp/d4.bin
	run readback-client2b vfio-nvme kcheck "$blk" /tmp/d4.bin $((7168 * 512))
fi
serve_log
links_new
dmesg_check dmesg
[ "$LEND" = vfio ] && phase done
smartio destroy $FAB --force >/dev/null 2>&1
kill $spid; wait $spid
echo "ntb-fabric: guest $G took $(cut -d' ' -f1 /proc/uptime)s of uptime"
