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
# The fabric's adapters over these two NTBs (docs/ntb.md, "Two NTBs between
# the same hosts") are not built on this yet: this is the ground they need.
#
# want: g0:load g1:load g0:two-ntbs g1:two-ntbs
# want: g0:echo-a g1:ping-a g0:echo-b g1:ping-b
# want: g0:unbind-a g1:a-down g1:b-stays-up g0:echo-b-alone g1:ping-b-alone
# want: g0:rebind-a g1:a-back g0:echo-a-back g1:ping-a-back
# want: g0:dmesg g1:dmesg
G=$(sed -n 's/.*sio\.guest=\([0-9]*\).*/\1/p' /proc/cmdline)
MOD=/lib/modules
A=0000:00:10.0			# NTB 0's function: its link is taken down
B=0000:00:11.0			# NTB 1's: it carries on
DRV=/sys/bus/pci/drivers/ntb_hw_ivshmem
PEER=$((1 - G))
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
# ping_over NAME FUNCTION: 10 round trips with port 0 on that NTB
ping_over() {
	run "$1" smartio ntb ping 0 --count 10 --dev "$(dev "$2")" &&
		sed -n "s/^ping port \(.*\)/SIO-VM MEASURE $1: port $G -> port \1 (TCG)/p" /tmp/out
}

echo "sio-suite: guest $G, two NTBs ($A, $B) to guest $PEER"
insmod $MOD/ntb.ko && insmod $MOD/ntb_hw_ivshmem.ko ports=2 link_timeout_ms=2000 &&
	insmod $MOD/smartio_ntb.ko && ok load || no load "$(dmesg | grep -i ntb | tail -n 3)"
if until_ok 90 up $A $B; then
	ok two-ntbs
else
	no two-ntbs "not both links to port $PEER up"
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

phase fault
if [ "$G" = 0 ]; then
	echo "$A" >$DRV/unbind && [ -z "$(dev $A)" ] && ok unbind-a ||
		no unbind-a "$A still bound: $(dev $A)"
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
	phase fault-seen
	phase ping-alone
	ping_over ping-b-alone $B
fi

phase rebind
if [ "$G" = 0 ]; then
	echo "$A" >$DRV/bind && until_ok 30 bound $A && ok rebind-a ||
		no rebind-a "no smartio_ntb device on $A again"
	echo_on echo-a-back $A
	phase ping-back
	waited echo-a-back
else
	if until_ok 90 up $A; then ok a-back; else no a-back "$A's link not up again"; fi
	phase ping-back
	ping_over ping-a-back $A
fi
smartio ntb status | sed 's/^/    | /'
phase end
dmesg_check dmesg
