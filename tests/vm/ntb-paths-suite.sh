# SPDX-License-Identifier: MIT
# Two NTBs between the same two hosts (run-ntb.sh with SIO_NTB_GUESTS=2,
# SIO_NTB_REGIONS=2): each guest has two ivshmem-doorbell functions on two
# regions, each its own server, so ntb_hw_ivshmem makes two NTB devices
# (0000:00:10.0 and 0000:00:11.0) and smartio_ntb a /dev/smartio-ntbN for
# each. What a second path needs of the NTBs below it, checked here:
#   - both come up, each on this guest's port, each with its link to the
#     other guest up, and doorbells round trip over each;
#   - a fault of one is a fault of that one alone: guest 0 unbinds the PCI
#     function of NTB 0 from ntb_hw_ivshmem (the device is gone, as a
#     hardware driver's removal or a hot unplug makes it), guest 1 sees that
#     NTB's link to port 0 go down while the other's stays up throughout,
#     and doorbells still round trip over it;
#   - the function bound again, the link of NTB 0 comes back and doorbells
#     round trip over it again; no kernel report.
# And a fabric of two adapters over them (docs/ntb.md, "Two NTBs between
# the same hosts"): each guest's node service holds both NTBs (--dev twice),
# guest 1 hosts a fabric made with --adapters 2, and `smartio path` there
# takes adapter 0 while both links are up, adapter 1 once NTB 0's link with
# port 0 is down (its service says so), and adapter 0 again once it is back.
# The two regions are one file (SIO_NTB_SHARED=1, ntb_hw_ivshmem's shared=2),
# as a host's memory sits behind both of its NTBs: each service exports its
# node's memory through NTB 1 too, and guest 0 reads the home's memory (the
# fabric's state) through NTB 1 as through NTB 0; after NTB 0's unbind, the
# home's memory is still reached through NTB 1, the same bytes as before.
# And a process's segment on a path through adapter 1 (ntb-fabric
# seg-watch): guest 1 maps guest 0's segment through adapter 1, which maps
# through NTB 1, and reads it whole every 50 ms across NTB 0's unbind, every
# byte as guest 0 wrote it; after the fault a plain map takes adapter 1.
# Then NTB 0's cable is pulled in guest 0 (ntb_hw_ivshmem's emulated
# fault: the link lost, the device kept) and plugged back: both guests
# see its link go down and come back, paths take adapter 1 and back, a
# process in each guest reads the other's segment through adapter 1 on,
# and a process of guest 0 that joined before the pull makes a segment in
# the home's memory during it: the state through NTB 1 (its lock moves
# the state's mappings there, state_route()); a process that joins during
# it makes one too (its service tells it to join through NTB 1), and
# guest 0's service writes its adapter 0 down through NTB 1.
# And a multipath NVMe client across the pull: guest 0 lends QEMU's NVMe
# (uio: no IOMMU in guest 0) and runs its manager; its relay maps guest 1's
# memory for the device through NTB 1 too, at an address of NTB 1's BAR2;
# guest 1's nvme-client --queue multipath writes and verifies its range
# across NTB 0's cable pulled and plugged back: its backup queue pair
# (queues, data, doorbells through NTB 1) takes over without an error to
# it, every block verified, the failover counted and its longest I/O
# measured (variant nvme, where the NVMe driver is built).
#
# want: g0:load g1:load g0:two-ntbs g1:two-ntbs
# want: g0:echo-a g1:ping-a g0:echo-b g1:ping-b g0:shared-region
# want: g0:serve g1:serve g0:export-b g1:export-b
# want: g1:create g0:joined g0:same-bytes-b g1:path-a g1:path-b-up
# want: g0:seg-make g1:seg-via-b
# want: g0:unbind-a g1:a-down g1:b-stays-up g0:echo-b-alone g1:ping-b-alone
# want: g0:state-through-b
# want: g1:adapter-0-down g1:path-takes-b g1:seg-read-on g1:seg-after-fault
# want: g0:rebind-a g1:a-back g0:echo-a-back g1:ping-a-back g1:path-back-a
# want: g0:serve-again g0:seg-make-0 g1:seg-make-1 g0:watch-b-0 g1:watch-b-1
# want: g0:cable-pull g1:cable-a-down g1:cable-b-up g1:cable-path-b
# want: g0:state-via-b g0:join-via-b g1:own-a-down g1:made-seen g1:joined-seen
# want: g0:cable-back g1:cable-a-back g1:cable-path-back-a
# want: g0:watch-read-on-0 g1:watch-read-on-1
# want-nvme: g0:lend g0:manager g0:pool-via-b g1:plain-client g1:mp-client-runs
# want-nvme: g1:mp-client g1:mp-failover
# want: g0:dmesg g1:dmesg
G=$(sed -n 's/.*sio\.guest=\([0-9]*\).*/\1/p' /proc/cmdline)
FAB=paths
SEG=7				# guest 0's kept segment, read by guest 1 through NTB 1
# guest 1 hosts; neither is a standby home (a take-over is not looked at here)
export SMARTIO_FABRIC_BACKEND=ntb SMARTIO_FABRIC=$FAB SMARTIO_QUIET=1 SMARTIO_NTB_STANDBY=0
MOD=/lib/modules
A=0000:00:10.0			# NTB 0's function: its link is taken down
B=0000:00:11.0			# NTB 1's: it carries on
DRV=/sys/bus/pci/drivers/ntb_hw_ivshmem
PEER=$((1 - G))
MAIN=0000:00:04.0		# QEMU's NVMe (guest 0 only)
NVME=$(sed -n 's/.*sio\.variant=[a-z0-9,]*\(nvme\).*/\1/p' /proc/cmdline)
# shellcheck disable=SC2034 # read and kept by phase (ntb-sync.sh)
n=0				# the last phase asked for

. /vm/guest.sh	# res, ok, no, run, until_ok
. /vm/ntb-sync.sh	# phase, dmesg_check

# dev FUNCTION: the /dev/smartio-ntbN of the NTB on that PCI function
# (numbers are handed out as devices come: not fixed to a function)
dev() {
	smartio ntb status 2>/dev/null | sed -n "s|^\(/dev/smartio-ntb[0-9]*\): $1 .*|\1|p"
}
# link FUNCTION: its link to the other guest, up or down (nothing: no device)
link() {
	d=$(dev "$1")
	[ -n "$d" ] && smartio ntb status "$d" | sed -n "s/^  peer [0-9]*: port $PEER, link \([a-z]*\).*/\1/p"
}
# link_is FUNCTION STATE: its link to the other guest is up, or down
link_is() { [ "$(link "$1")" = "$2" ]; }
# cable_said: this kernel took NTB 0's link down for its pulled cable
cable_said() { dmesg | grep -q "$A: link with port $PEER down (cable pulled here)"; }
# up FUNCTION...: the link of each is up
up() { for f in "$@"; do [ "$(link "$f")" = up ] || return 1; done; }
# bound FUNCTION: it has its smartio_ntb device
bound() { [ -n "$(dev "$1")" ]; }
# echo_on NAME FUNCTION: answer 10 pings on that NTB, in the background,
# checked by waited
echo_on() {
	smartio ntb ping --echo --count 10 --dev "$(dev "$2")" >"/tmp/echo.$1.log" 2>&1 &
	epid=$!
	i=0
	while ! grep -q answers "/tmp/echo.$1.log" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.2; i=$((i + 1)); done
}
# waited NAME: the echo_on of that NAME passed
waited() {
	if wait "$epid"; then ok "$1"; else no "$1" "exit $?"; fi
	sed 's/^/    | /' "/tmp/echo.$1.log"
}
# via: the adapter and link of the path from this node to the other, as
# `smartio path` says it ("0 up"), or nothing
via() {
	smartio path "node:$G" "node:$PEER" "$@" 2>/dev/null |
		sed -n 's/^node .* via adapter \([0-9]*\), link \([a-zA-Z]*\),.*/\1 \2/p'
}
via_is() { [ "$(via)" = "$1" ]; }
# adapter_link NODE ADAPTER: that adapter's link in the registry, as
# `smartio status` shows it (up, DOWN)
adapter_link() { smartio status 2>/dev/null | awk -v n="$1" -v a="$2" '$1 == n && $2 == a && NF == 5 { print $4 }'; }
adapter_is() { [ "$(adapter_link "$1" "$2")" = "$3" ]; }
serve_log() { sed 's/^/    | serve: /' /tmp/serve.log; }
# failover_time: from this kernel's "link with port 0 down" of NTB 0 to
# the service's line that takes adapter 0 down (paths move to adapter 1),
# both on this kernel's clock since boot (TCG)
failover_time() {
	down=$(dmesg | sed -n "s/^\[ *\([0-9.]*\)\].*$A: link with port $PEER down.*/\1/p" | tail -n 1)
	at=$(sed -n "s/.*adapter 0 of node $G .*link down.*, \([0-9.]*\) s (CLOCK_MONOTONIC)/\1/p" /tmp/serve.log | tail -n 1)
	[ -n "$down" ] && [ -n "$at" ] &&
		echo "SIO-VM MEASURE ntb-paths: failover: adapter 0 of node $G taken down $(echo "$at $down" | awk '{ printf "%.3f", $1 - $2 }') s after NTB 0's link with port $PEER was seen down ($(uname -r), TCG)"
}
# ping_over NAME FUNCTION: 10 round trips with port 0 on that NTB
ping_over() {
	run "$1" smartio ntb ping 0 --count 10 --dev "$(dev "$2")" &&
		sed -n "s/^ping port \(.*\)/SIO-VM MEASURE $1: port $G -> port \1 (TCG)/p" /tmp/out
}

echo "sio-suite: guest $G, two NTBs ($A, $B) to guest $PEER"
SHARED=$(sed -n 's/.*sio\.shared=\([0-9]*\).*/\1/p' /proc/cmdline)
insmod $MOD/ntb.ko && insmod $MOD/ntb_hw_ivshmem.ko ports=2 link_timeout_ms=2000 ${SHARED:+shared=$SHARED} &&
	insmod $MOD/smartio_ntb.ko && ok load || no load "$(dmesg | grep -i ntb | tail -n 3)"
if until_ok 90 up $A $B; then
	ok two-ntbs
else
	no two-ntbs "not both links to port $PEER up"
	dmesg | grep ntb_hw_ivshmem | tail -n 5 | sed 's/^/    | /'
fi
smartio ntb status | sed 's/^/    | /'

phase pings
if [ "$G" = 0 ]; then
	echo_on echo-a $A
	phase ping-a
	waited echo-a
	echo_on echo-b $B
	phase ping-b
	waited echo-b
else
	phase ping-a
	ping_over ping-a $A
	phase ping-b
	ping_over ping-b $B
fi

# one file behind both NTBs: one allocator, a buffer of NTB 0 exported
# through NTB 1 and held there (ntb-uapi shared), before any other buffer
[ "$G" != 0 ] || run shared-region ntb-uapi shared $PEER "$(dev $A)" "$(dev $B)"

# the fabric: one node service per guest on both NTBs, guest 1 the home;
# the processes find it by NTB 0's device
SMARTIO_NTB_DEV=$(dev $A)
export SMARTIO_NTB_DEV
smartio ntb serve --dev "$SMARTIO_NTB_DEV" --dev "$(dev $B)" >/tmp/serve.log 2>&1 &
spid=$!
if until_ok 60 grep -q "link with port $PEER up" /tmp/serve.log &&
   grep -q "adapter 1 of node $G: /dev/smartio-ntb" /tmp/serve.log; then
	ok serve
else
	no serve "no memory, or no NTB for adapter 1"; serve_log
fi
# the node's memory exported through NTB 1 too (one file behind both)
if until_ok 30 grep -q "adapter 1 of node $G (.*): its memory exported to port $PEER through window 0" /tmp/serve.log; then
	ok export-b
else
	no export-b "the service did not export its memory through NTB 1"; serve_log
fi
phase served
if [ "$G" = 1 ]; then
	run create smartio create $FAB --nodes 2 --adapters 2
	phase created
	phase joined
	if until_ok 30 via_is "0 up"; then ok path-a; else no path-a "smartio path: '$(via)', not adapter 0 up"; fi
	if [ "$(via --adapter 1)" = "1 up" ]; then ok path-b-up; else no path-b-up "through adapter 1: '$(via --adapter 1)'"; fi
	smartio path "node:$G" "node:$PEER" | sed 's/^/    | /'
else
	phase created
	until_ok 60 grep -q "joined fabric '$FAB'" /tmp/serve.log && ok joined ||
		{ no joined "the service did not join '$FAB'"; serve_log; }
	# the home's memory holds the fabric's state now: not all zero
	if until_ok 30 grep -q "adapter 1 of node $G (.*): port $PEER's memory through it is the memory adapter 0 reaches (the first 4096 bytes the same)" /tmp/serve.log; then
		ok same-bytes-b
	else
		no same-bytes-b "NTB 1 did not reach the home's memory as NTB 0 does"; serve_log
	fi
	# a kept segment in this node's memory, for guest 1 to read through NTB 1
	run seg-make ntb-fabric seg-make $G $SEG 0x5a
	phase joined
fi
phase segment
if [ "$G" = 1 ]; then
	# mapped through adapter 1 (NTB 1) while both links are up, read until
	# the fault is over (seg_read_on)
	rm -f /tmp/watch.stop
	ntb-fabric seg-watch $PEER $SEG 0x5a 1 /tmp/watch.stop >/tmp/watch.log 2>&1 &
	wpid=$!
	if until_ok 30 grep -q "mapped through adapter 1; connection: pool window through adapter 1: port $PEER's window 0 of /dev/smartio-ntb" /tmp/watch.log; then
		ok seg-via-b
	else
		no seg-via-b "the segment was not mapped through NTB 1"
		sed 's/^/    | watch: /' /tmp/watch.log; serve_log
	fi
fi

phase fault
if [ "$G" = 0 ]; then
	echo "$A" >$DRV/unbind && [ -z "$(dev $A)" ] && ok unbind-a ||
		no unbind-a "$A still bound: $(dev $A)"
	# the home's memory, the state in it, still reached through NTB 1
	if until_ok 30 grep -q "fabric '$FAB': its state, in port $PEER's memory, read through adapter 1 .*: the fabric's header is there" /tmp/serve.log; then
		ok state-through-b
	else
		no state-through-b "the state was not read through NTB 1 after NTB 0's unbind"; serve_log
	fi
	phase fault-seen
	echo_on echo-b-alone $B
	phase ping-alone
	waited echo-b-alone
else
	# B's link looked at at each look at A's, A's every 0.2 s (from the
	# GO that guest 0 unbinds at: the time includes the phase's lag)
	t0=$(cut -d' ' -f1 /proc/uptime) t=0 bdown=
	while [ "$(link $A)" = up ] && [ $t -lt 300 ]; do
		[ "$(link $B)" = up ] || bdown=$t
		sleep 0.2; t=$((t + 1))
	done
	t1=$(cut -d' ' -f1 /proc/uptime)
	if [ "$(link $A)" = down ]; then
		ok a-down
		echo "$t0 $t1" | awk '{ printf "SIO-VM MEASURE ntb-paths: NTB 0'"'"'s link seen down here %.1f s after the GO of its unbind in guest 0 (link_timeout_ms=2000, TCG)\n", $2 - $1 }'
	else
		no a-down "the link of $A to port $PEER is '$(link $A)' after 300 looks"
	fi
	[ "$(link $B)" = up ] || bdown=$t
	if [ -z "$bdown" ]; then ok b-stays-up; else no b-stays-up "$B's link was down at look $bdown (every 0.2 s)"; fi
	# the fabric: this node's adapter 0 down, paths through adapter 1
	if until_ok 30 grep -q "adapter 0 of node $G .*link down: no link with port $PEER" /tmp/serve.log; then
		ok adapter-0-down
	else
		no adapter-0-down "the service did not take adapter 0 down"; serve_log
	fi
	failover_time
	if until_ok 30 via_is "1 up"; then
		ok path-takes-b
	else
		no path-takes-b "smartio path: '$(via)', not adapter 1 up"
	fi
	smartio path "node:$G" "node:$PEER" | sed 's/^/    | /'
	smartio status | grep -i adapter | sed 's/^/    | /'
	# the mapping through NTB 1 read on across the fault, every byte right
	touch /tmp/watch.stop
	if wait $wpid && grep -q "whole reads in .*, every byte 0x5a" /tmp/watch.log; then
		ok seg-read-on
	else
		no seg-read-on "the mapping through NTB 1 did not read on"
	fi
	sed 's/^/    | watch: /' /tmp/watch.log
	# a plain map now: the path takes adapter 1, so NTB 1 (then the
	# segment, adopted, goes)
	run seg-after-fault ntb-fabric seg-check $PEER $SEG 0x5a
	phase fault-seen
	phase ping-alone
	ping_over ping-b-alone $B
fi

phase rebind
if [ "$G" = 0 ]; then
	echo "$A" >$DRV/bind && until_ok 30 bound $A && ok rebind-a ||
		no rebind-a "no smartio_ntb device on $A again"
	# the service holds the NTB 0 of before the unbind, and through NTB 1
	# says adapter 0 of this node is down (it is, for the fabric): a new
	# service for the new NTB 0 brings it back
	kill -KILL $spid
	wait $spid 2>/dev/null
	serve_log
	SMARTIO_NTB_DEV=$(dev $A)
	smartio ntb serve --dev "$SMARTIO_NTB_DEV" --dev "$(dev $B)" >/tmp/serve.log 2>&1 &
	spid=$!
	if until_ok 60 grep -q "joined fabric '$FAB'" /tmp/serve.log &&
	   until_ok 30 grep -q "node $G's pool: .*, reached through adapter 1 too" /tmp/serve.log; then
		ok serve-again
	else
		no serve-again "the new service did not join, or exports nothing through NTB 1"; serve_log
	fi
	echo_on echo-a-back $A
	phase ping-back
	waited echo-a-back
else
	if until_ok 90 up $A; then ok a-back; else no a-back "$A's link not up again"; fi
	if until_ok 90 via_is "0 up"; then ok path-back-a; else no path-back-a "smartio path: '$(via)', not adapter 0 up"; fi
	phase ping-back
	ping_over ping-a-back $A
fi
# QEMU's NVMe of guest 0 lent (uio: no IOMMU in guest 0), its manager
# beside it; guest 1 runs a multipath client across the cable's pull below
phase nvme
if [ "$G" = 0 ] && [ -n "$NVME" ]; then
	mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages
	for m in $(cat /lib/modules/uio.list); do insmod /lib/modules/$m 2>/dev/null; done
	smartio uio bind $MAIN >/dev/null 2>&1
	nvme-lend $MAIN --fabric $FAB --uio >/tmp/lend.log 2>&1 &
	if until_ok 90 grep -q '^lending' /tmp/lend.log; then ok lend; else no lend "$(cat /tmp/lend.log)"; fi
	dev=$(sed -n 's/.* as device \([0-9]*\) .*/\1/p' /tmp/lend.log)
	nvme-manager --fabric $FAB --device "$dev" --ready-file /tmp/mgr.ready >/tmp/mgr.log 2>&1 &
	if until_ok 120 test -s /tmp/mgr.ready; then ok manager; else no manager "$(cat /tmp/mgr.log)"; fi
	# the relay maps guest 1's memory for the device through NTB 1 too,
	# at an address in NTB 1's BAR2 (its outbound window to port 1)
	if until_ok 30 grep -q "reaches pool $PEER through adapter 1 too" /tmp/lend.log; then
		at=$(sed -n "s/.*reaches pool $PEER through adapter 1 too, at bus address \(0x[0-9a-f]*\).*/\1/p" /tmp/lend.log | tail -n 1)
		r=$(sed -n 3p /sys/bus/pci/devices/$B/resource)	# BAR2: start end flags
		lo=${r%% *} r=${r#* } hi=${r%% *}
		if [ $((at)) -ge $((lo)) ] && [ $((at)) -le $((hi)) ]; then
			ok pool-via-b
		else
			no pool-via-b "bus address $at is outside NTB 1's BAR2 ($lo..$hi)"
		fi
	else
		no pool-via-b "the lender did not map guest 1's memory through NTB 1"
	fi
	sed 's/^/    | lend: /' /tmp/lend.log
fi
phase lent
if [ "$G" = 1 ] && [ -n "$NVME" ]; then
	# a single-path client first, then the multipath one
	run plain-client nvme-client --fabric $FAB --lba 512 --count 16 --bs 4k --qd 2 --timeout 20000
	nvme-client --fabric $FAB --queue multipath --lba 0 --count 256 --bs 4k --qd 2 \
		--time 600 --progress 1s --timeout 30000 >/tmp/mp.log 2>&1 &
	cpid=$!
	if until_ok 20 grep -q "^nvme-client: [0-9.]* s of [0-9]* s: [1-9]" /tmp/mp.log; then
		ok mp-client-runs
	else
		no mp-client-runs "no progress"
		kill -USR1 $cpid; sleep 1
		sed 's/^/    | client: /' /tmp/mp.log | grep -v "s of 600 s: 0 I/Os"
		smartio status | sed 's/^/    | status: /'
	fi
fi
# NTB 0's cable pulled in guest 0 (ntb_hw_ivshmem's debugfs "cable", an
# emulated fault): its link lost while the device stays, as a link that
# lost training; each guest's process reads the other's segment through
# adapter 1 across it, and the link comes back when the cable is in again
run seg-make-$G ntb-fabric seg-make $G $((SEG + 1 + G)) $((0x3c + G))
phase cable-ready
rm -f /tmp/watch.stop
ntb-fabric seg-watch $PEER $((SEG + 1 + PEER)) $((0x3c + PEER)) 1 /tmp/watch.stop >/tmp/watch.log 2>&1 &
wpid=$!
if until_ok 30 grep -q "mapped through adapter 1; connection: pool window through adapter 1" /tmp/watch.log; then
	ok watch-b-$G
else
	no watch-b-$G "the peer's segment was not mapped through NTB 1"; sed 's/^/    | watch: /' /tmp/watch.log
fi
# a process of guest 0, joined now, makes a segment in the home's memory
# once NTB 0's cable is out: the state through NTB 1 (seg-make-at)
if [ "$G" = 0 ]; then
	rm -f /tmp/make.go
	ntb-fabric seg-make-at $PEER $((SEG + 3)) $((0x11)) /tmp/make.go >/tmp/make.log 2>&1 &
	mpid=$!
	# joined before the pull (a join takes seconds in TCG under load)
	until_ok 60 grep -q "^joined as node" /tmp/make.log
fi
phase pull
if [ "$G" = 0 ]; then
	mount -t debugfs none /sys/kernel/debug 2>/dev/null
	echo 0 >"/sys/kernel/debug/ntb_hw_ivshmem:$A/cable" && until_ok 10 cable_said &&
		bound $A && ok cable-pull || no cable-pull "$(dmesg | grep "$A" | tail -n 3)"
else
	if until_ok 30 link_is $A down; then ok cable-a-down; else no cable-a-down "$A's link is '$(link $A)'"; fi
	if up $B; then ok cable-b-up; else no cable-b-up "$B's link went down too"; fi
	if until_ok 30 via_is "1 up"; then ok cable-path-b; else no cable-path-b "smartio path: '$(via)'"; fi
fi
phase pulled
if [ "$G" = 0 ]; then
	# the path takes adapter 1 now (guest 1 saw it): the segment's bytes
	# go through NTB 1, the registry's through the state moved there
	touch /tmp/make.go
	i=0
	while kill -0 $mpid 2>/dev/null && [ $i -lt 900 ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 $mpid 2>/dev/null; then
		kill -KILL $mpid; wait $mpid; no state-via-b "no answer in 90 s"
	elif wait $mpid; then
		ok state-via-b
	else
		no state-via-b "exit $?"
	fi
	sed 's/^/    | make: /' /tmp/make.log
	# a process that joins now: the bootstrap through NTB 0 is out of
	# reach, and the service reads the state through NTB 1
	run join-via-b ntb-fabric seg-make $PEER $((SEG + 4)) $((0x12))
else
	# guest 0's service writes its adapter 0 down itself: its own handle
	# of the fabric reaches the state through NTB 1 too
	if until_ok 30 adapter_is 0 0 DOWN; then ok own-a-down
	else no own-a-down "node 0's adapter 0 is '$(adapter_link 0 0)' in smartio status"; fi
fi
phase made
if [ "$G" = 0 ]; then
	echo 1 >"/sys/kernel/debug/ntb_hw_ivshmem:$A/cable" && until_ok 90 up $A &&
		ok cable-back || no cable-back "$A's link not up again: '$(link $A)'"
else
	# what guest 0's process made here while its NTB 0 was out
	run made-seen ntb-fabric seg-check $G $((SEG + 3)) $((0x11))
	run joined-seen ntb-fabric seg-check $G $((SEG + 4)) $((0x12))
	if until_ok 90 up $A; then ok cable-a-back; else no cable-a-back "$A's link not up again"; fi
	if until_ok 30 via_is "0 up"; then ok cable-path-back-a; else no cable-path-back-a "smartio path: '$(via)'"; fi
fi
phase plugged
touch /tmp/watch.stop
if wait $wpid && grep -q "whole reads in .*, every byte" /tmp/watch.log; then
	ok watch-read-on-$G
else
	no watch-read-on-$G "the mapping through NTB 1 did not read on across the pull"
fi
sed 's/^/    | watch: /' /tmp/watch.log
if [ "$G" = 1 ] && [ -n "$NVME" ]; then
	# the multipath client went on across the pull, and back on path 0:
	# two progress lines after the plug, then it stops (SIGTERM: what is
	# in flight completes, then its report)
	n0=$(grep -c "^nvme-client: [0-9.]* s of" /tmp/mp.log)
	until_ok 60 sh -c "[ \$(grep -c '^nvme-client: [0-9.]* s of' /tmp/mp.log) -ge $((n0 + 2)) ]"
	kill -TERM $cpid
	if wait $cpid && grep -q "mismatches 0  errors 0" /tmp/mp.log; then
		ok mp-client
	else
		no mp-client "exit $?"
	fi
	sed 's/^/    | client: /' /tmp/mp.log
	f=$(sed -n 's/.*, \([0-9]*\) failover(s)$/\1/p' /tmp/mp.log)
	if [ "${f:-0}" -ge 1 ]; then ok mp-failover; else no mp-failover "failovers: '${f:-none}'"; fi
	awk -v k="$(uname -r)" '$1 == "write" || $1 == "read" { for (i = 1; i < NF; i++) if ($i == "max") m = $(i + 1) > m ? $(i + 1) : m }
		END { if (m) printf "SIO-VM MEASURE ntb-paths: multipath client failover: its longest I/O across NTB 0'"'"'s cable pull %.3f s (%s, TCG)\n", m / 1e6, k }' /tmp/mp.log
fi
[ "$G" = 0 ] && [ -n "$NVME" ] && { sed 's/^/    | lend: /' /tmp/lend.log; tail -n 20 /tmp/mgr.log | sed 's/^/    | mgr: /'; }
phase cable-done
# guest 0's service is killed, guest 1's stops (the fabric goes with the
# home's memory)
if [ "$G" = 0 ]; then kill -KILL $spid; else kill $spid; fi
wait $spid 2>/dev/null
serve_log
smartio ntb status | sed 's/^/    | /'
phase end
dmesg_check dmesg
