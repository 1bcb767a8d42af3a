# SPDX-License-Identifier: MIT
# The ntb fabric's home killed, the guests' side (run-ntb.sh runs it with
# SIO_NTB_SUITE): three guests, ports 0 1 2 of an NTB of ntb_hw_ivshmem,
# one fabric of backend ntb, a node service in each kernel. The home, the
# lender and the client are three different kernels:
#
#   guest 2   creates the fabric: its state lives in guest 2's memory
#   guest 0   lends QEMU's NVMe (vfio, VT-d) and runs nvme-manager
#   guest 1   verified nvme-client I/O
#
# Guest 1's node service becomes the standby home (a copy of the state in
# its memory; guest 0's is told not to be one, SMARTIO_NTB_STANDBY=0, so
# that the new home is not the lender's kernel either). Guest 2's QEMU is
# SIGKILLed while guest 1's client writes and reads back: the client goes
# on, the standby takes over (the time from the home's link seen down to
# the take-over is measured, in the kernel's log and the service's), guest
# 0's service follows it, a new client borrows through the new home.
# Then guest 2 boots again as a new kernel on port 2, rejoins as a node of
# the fabric guest 1 hosts (the time from its service's start is measured),
# becomes the new home's standby, and borrows; it does not take the home
# back nor split the fabric: every service sees one home, port 1, and guest
# 1 borrows again after the return. Guest 0's kernel nvme driver reads back
# the blocks written before the kill, after the rejoin and after the
# return; dmesg clean everywhere.
#
# host: kill-2 join
# want: g0:load g1:load g2:load g0:serve g1:serve g2:serve g2:fabric-create
# want: g0:fabric-join g1:fabric-join g0:lend g0:manager g1:identify g1:client-write-verify
# want: g1:standby-named host:guest2-killed
# want: g1:client-across-the-home-kill g0:home-served g1:home-served g0:manager-served-on
# want: g1:took-over g0:followed g1:client-after-takeover
# want: g2b:restarted g2b:serve g2b:rejoin g2b:rejoin-as-node g2b:standby-again
# want: g2b:identify-after-rejoin
# want: g2b:client-after-rejoin g2b:not-home g0:still-one-home g1:still-one-home
# want: g1:client-after-return g2b:dmesg
# want: g0:readback-client1 g0:readback-client2 g0:readback-after-return g0:dmesg g1:dmesg
. /vm/guest.sh	# res, ok, no, run, until_ok, readback_clients, ...
FAB=homefab
MOD=/lib/modules
MAIN=0000:00:04.0			# QEMU's NVMe (guest 0 only)
LEND=vfio
G=$(sed -n 's/.*sio\.guest=\([0-9]*\).*/\1/p' /proc/cmdline)
export SMARTIO_FABRIC_BACKEND=ntb SMARTIO_FABRIC=$FAB SMARTIO_QUIET=1
export SMARTIO_SHMWIN_LEASE_MS=12000 SMARTIO_NVME_RESTART_MS=60000
# the lender's kernel is never the standby home (its node service reads this)
[ "$G" = 0 ] && export SMARTIO_NTB_STANDBY=0
n=0
RUN_LIMIT=240
. /vm/ntb-sync.sh	# phase, hello, dmesg_check
. /vm/ntb-fabric.sh	# load, serve, serve_log, client, lend_start

# took_over: this kernel's service took over, or followed the port that did
took_over() {
	grep -q "is the fabric's home from now on\|is hosted by port 1 from now on" /tmp/serve.log
}
# the take-over's time: from the kernel's "link with port 2 down" to the
# service's line, both on this kernel's clock since boot (TCG)
takeover_time() {
	down=$(dmesg | sed -n 's/^\[ *\([0-9.]*\)\].*link with port 2 down.*/\1/p' | head -n 1)
	at=$(sed -n "s/.*is the fabric's home from now on.*, \([0-9.]*\) s (CLOCK_MONOTONIC)/\1/p" /tmp/serve.log)
	[ -n "$down" ] && [ -n "$at" ] &&
		echo "SIO-VM MEASURE takeover: the new home served $(echo "$at $down" | awk '{ printf "%.3f", $1 - $2 }') s after port 2's link was seen down (link_timeout_ms=2000 after its death; TCG)"
}

# the rejoin's time, on this kernel's clock since boot (TCG): from its node
# service's start (T0, uptime) to its join as a node and to its claim of the
# standby's role (the service's lines, CLOCK_MONOTONIC)
rejoin_time() {
	tj=$(sed -n "s/.*joined fabric .* as node 2, \([0-9.]*\) s (CLOCK_MONOTONIC)/\1/p" /tmp/serve.log | head -n 1)
	ts=$(sed -n "s/.*the standby home of fabric .*, \([0-9.]*\) s (CLOCK_MONOTONIC)/\1/p" /tmp/serve.log | head -n 1)
	[ -n "$tj" ] && [ -n "$ts" ] &&
		echo "SIO-VM MEASURE rejoin: port 2 back (a new kernel, its service started $1 s after boot) joined as node $(echo "$tj $1" | awk '{ printf "%.3f", $1 - $2 }') s after its service started, was the new home's standby $(echo "$ts $1" | awk '{ printf "%.3f", $1 - $2 }') s after (TCG)"
}
# one_home NAME WHY: since the take-over this kernel's service saw one home,
# port 1's: no second home (a take-back by port 2, a split that the rule
# settled by a yield), and it says the fabric is hosted by port 1
one_home() {
	if grep -q "yields\|hosts fabric '$FAB' (generation [0-9]*) too\|hosted by port [02] from now on" /tmp/serve.log ||
		! smartio status $FAB >/tmp/st 2>&1 || grep -q 'both say they host' /tmp/st; then
		serve_log; cat /tmp/st 2>/dev/null; no "$1" "$2"
	else
		ok "$1"
	fi
}

load
if grep -q 'sio.join' /proc/cmdline; then
	# -- guest 2 booted again after its kill: a new kernel on port 2 joins
	# the fabric that a survivor hosts now, as a node
	dmesg | grep -q 'restarted: its slot still holds' && ok restarted ||
		no restarted "not port 2's slot of the killed guest"
	hello
	t0=$(cut -d' ' -f1 /proc/uptime)
	serve 2
	phase join
	until_ok 60 smartio status $FAB && ok rejoin || no rejoin "$(cat /tmp/until)"
	# a node of the fabric guest 1 hosts since the take-over: not its home again
	until_ok 30 grep -q "joined fabric '$FAB' (generation [0-9]*, hosted by port 1) as node 2" /tmp/serve.log &&
		ok rejoin-as-node || { serve_log; no rejoin-as-node "not a node of the fabric port 1 hosts"; }
	# the new home has no standby since the take-over (guest 0 keeps out): this one
	until_ok 30 grep -q "the standby home of fabric '$FAB'" /tmp/serve.log && ok standby-again ||
		{ serve_log; no standby-again "guest 2's service is not the new home's standby"; }
	rejoin_time "$t0"
	until_ok 60 nvme-identify --fabric $FAB && ok identify-after-rejoin ||
		no identify-after-rejoin "$(cat /tmp/until)"
	client client-after-rejoin --lba 1024 --count 256 --bs 4k --qd 2 --pattern 0xb2 --flush
	if grep -q "is the fabric's home from now on" /tmp/serve.log; then
		serve_log; no not-home "port 2, back, took the home"
	else
		one_home not-home "port 2, back, saw two homes or moved the home"
	fi
	phase rejoined
	phase returned
	dmesg_check dmesg
	serve_log
	kill $spid; wait $spid
	exit 0
fi

serve 2
phase serve
case $G in
2)	run fabric-create smartio create $FAB --nodes 3 ;;
*)	until_ok 60 smartio status $FAB && ok fabric-join || no fabric-join "$(cat /tmp/until)" ;;
esac
phase fabric
if [ "$G" = 0 ]; then
	lend_start
	nvme-manager --fabric $FAB --device "$dev" --ready-file /tmp/mgr.ready >/tmp/mgr.log 2>&1 &
	mpid=$!
	until_ok 120 test -s /tmp/mgr.ready && ok manager || { cat /tmp/mgr.log; no manager; }
fi
phase served
if [ "$G" = 1 ]; then
	until_ok 60 nvme-identify --fabric $FAB && ok identify || no identify "$(cat /tmp/until)"
	client client-write-verify --lba 0 --count 256 --bs 4k --qd 4 --pattern 0xa1 --flush
fi
# guest 1's service keeps the copy
if [ "$G" = 1 ]; then
	until_ok 30 grep -q "the standby home of fabric '$FAB'" /tmp/serve.log &&
		ok standby-named || { serve_log; no standby-named "guest 1's service is not the standby home"; }
fi
phase standby

# -- guest 2, the home, killed while guest 1's client writes and reads back
# (the kill once the client is under way: it reports every 5 s)
if [ "$G" = 1 ]; then
	nvme-client --fabric $FAB --lba 2048 --count 1024 --bs 4k --qd 2 --random \
		--time 30 --timeout 60000 >/tmp/kill.log 2>&1 &
	cpid=$!
	until_ok 60 grep -q 'nvme-client: 5 s of' /tmp/kill.log || no client-started "$(cat /tmp/kill.log)"
fi
phase kill-2
case $G in
2)	sleep 300; no still-alive "guest 2 should have been killed"; exit 0 ;;
1)	wait $cpid && r=0 || r=$?
	sed 's/^/    | /' /tmp/kill.log
	[ $r = 0 ] && grep -q 'mismatches 0 ' /tmp/kill.log && ok client-across-the-home-kill ||
		no client-across-the-home-kill "exit $r, or blocks that mismatch" ;;
esac
until_ok 90 took_over && until_ok 30 smartio status $FAB && ok home-served ||
	{ serve_log; no home-served "this node's service neither took over nor followed a new home"; }
case $G in
1)	grep -q "this node (port 1) is the fabric's home from now on" /tmp/serve.log && ok took-over ||
		no took-over "guest 1's service did not say it took over"
	takeover_time ;;
0)	grep -q "fabric '$FAB' is hosted by port 1 from now on (it took over from port 2)" /tmp/serve.log &&
		ok followed || no followed "guest 0's service did not follow port 1" ;;
esac
if [ "$G" = 0 ]; then
	kill -0 $mpid && ok manager-served-on || { cat /tmp/mgr.log; no manager-served-on "the manager ended"; }
fi
# a new borrow, through the new home
[ "$G" = 1 ] && client client-after-takeover --lba 4096 --count 256 --bs 4k --qd 2 --pattern 0x5c --flush
phase took-over

# -- guest 2 boots again and rejoins (run-ntb.sh boots it at this phase)
phase join
phase rejoined
# port 2 back in the fabric did not take the home back, nor split it: guest
# 1 hosts it still, guest 0 follows it, and a borrow through it works
one_home still-one-home "port 2's return made a second home, or moved the home"
[ "$G" = 1 ] && client client-after-return --lba 5120 --count 256 --bs 4k --qd 2 --pattern 0x7e --flush
phase returned
[ "$G" = 1 ] && { serve_log; dmesg_check dmesg; kill $spid; wait $spid; exit 0; }

# -- guest 0's own nvme driver reads back the blocks of before and after
kill $mpid; wait $mpid
sed 's/^/    | /' /tmp/mgr.log
kill $lpid; wait $lpid
run unbind smartio vfio unbind $MAIN
blk=$(kernel_nvme_blk $MAIN)
readback_clients "$blk"
head -c $((256 * 512)) /dev/zero | tr '\0' '\176' >/tmp/7e.bin
run readback-after-return vfio-nvme kcheck "$blk" /tmp/7e.bin $((5120 * 512))
serve_log
dmesg_check dmesg
smartio destroy $FAB --force >/dev/null 2>&1
kill $spid; wait $spid
echo "ntb-home: guest $G took $(cut -d' ' -f1 /proc/uptime)s of uptime"
