# SPDX-License-Identifier: MIT
# ntb_hw_ivshmem's hardware profiles (profile=, docs/ntb.md), the guest side
# of run-ntb.sh: the same three guests load each profile in turn (the
# modules unloaded and BAR2 cleared between two), and the upstream clients
# run over it as they would over that hardware:
#   ntb_tool  the port numbers and doorbell bits the profile's driver has;
#             scratchpads where it has them, message registers where it has
#             them (idt: a full register refuses the next message, the
#             sender's status bit says so); doorbells rung both ways; a
#             window each way, its data checked by the receiver, translated
#             inbound (mw_trans) or, on idt, outbound (peer_mw_trans to the
#             bus address the receiver sends in two messages)
#   ntb_perf  to each peer (by messages on idt, scratchpads elsewhere)
#   ntb_pingpong
#   smartio_ntb (idt, ports 0 and 1): ntb-uapi outbound, 64- and 32-bit:
#             the features it reports, what the hardware lacks refused, a
#             buffer's bus address sent in messages, an outbound window
#             translated there and written, the data checked; a message
#             sent before the receiver opened the device is signalled on
#             the eventfd it sets afterwards
# The two-port profiles (intel, amd, switchtec, epf) have ports 0 and 1:
# guest 2's driver refuses its function, and it waits. Bad settings are
# refused at load, naming the parameter. Variant selftest (run-ntb.sh's
# SIO_NTB_VARIANT=selftest) runs the kernel's NTB selftest, ntb_test.sh,
# over each profile too, guest 0 against guest 1 (lib/ntb-selftest.sh).
# SIO_NTB_PROFILES=P[,Q...] (sio.profiles=) runs only those profiles.
#
# profiles: ivshmem intel amd switchtec epf idt
# want: g0:load-ivshmem g1:load-ivshmem g2:load-ivshmem g0:tool-ivshmem g1:tool-ivshmem g2:tool-ivshmem
# want: g0:spad-ivshmem g1:spad-ivshmem g2:spad-ivshmem g0:db-ivshmem g1:db-ivshmem g2:db-ivshmem
# want: g0:mw-ivshmem g1:mw-ivshmem g2:mw-ivshmem g0:perf-ivshmem g1:perf-ivshmem g2:perf-ivshmem
# want: g0:pingpong-ivshmem g1:pingpong-ivshmem g2:pingpong-ivshmem
# want: g0:refuse-intel g1:refuse-intel g2:refuse-intel g2:beyond-intel
# want: g0:load-intel g1:load-intel g0:tool-intel g1:tool-intel g0:spad-intel g1:spad-intel
# want: g0:db-intel g1:db-intel g0:mw-intel g1:mw-intel g0:perf-intel g1:perf-intel g0:pingpong-intel g1:pingpong-intel
# want: g2:beyond-amd g0:load-amd g1:load-amd g0:tool-amd g1:tool-amd g0:spad-amd g1:spad-amd
# want: g0:db-amd g1:db-amd g0:mw-amd g1:mw-amd g0:perf-amd g1:perf-amd g0:pingpong-amd g1:pingpong-amd
# want: g2:beyond-switchtec g0:load-switchtec g1:load-switchtec g0:tool-switchtec g1:tool-switchtec
# want: g0:spad-switchtec g1:spad-switchtec g0:db-switchtec g1:db-switchtec g0:mw-switchtec g1:mw-switchtec
# want: g0:perf-switchtec g1:perf-switchtec g0:pingpong-switchtec g1:pingpong-switchtec
# want: g2:beyond-epf g0:load-epf g1:load-epf g0:tool-epf g1:tool-epf g0:spad-epf g1:spad-epf
# want: g0:db-epf g1:db-epf g0:mw-epf g1:mw-epf g0:perf-epf g1:perf-epf g0:pingpong-epf g1:pingpong-epf
# want: g0:refuse-idt g1:refuse-idt g2:refuse-idt
# want: g0:load-idt g1:load-idt g2:load-idt g0:tool-idt g1:tool-idt g2:tool-idt
# want: g0:msg-idt g1:msg-idt g2:msg-idt g0:msg-full-idt g1:msg-full-idt g2:msg-full-idt
# want: g0:db-idt g1:db-idt g2:db-idt g0:mw-idt g1:mw-idt g2:mw-idt
# want: g0:perf-idt g1:perf-idt g2:perf-idt g0:pingpong-idt g1:pingpong-idt g2:pingpong-idt
# want: g0:sntb-idt-early g1:sntb-idt-early g0:sntb-idt g1:sntb-idt g0:sntb-idt-32 g1:sntb-idt-32
# want: g0:dmesg g1:dmesg g2:dmesg
# want-selftest: g0:net-up g1:net-up g2:net-up g0:selftest-up g1:selftest-up g2:selftest-up
# want-selftest: g0:selftest-ivshmem g0:st-port-ivshmem g0:st-link-ivshmem g0:st-db-ivshmem g0:st-spad-ivshmem
# want-selftest: g0:st-mw-ivshmem g0:st-pingpong-ivshmem g0:st-perf-ivshmem g0:st-mwdata-ivshmem
# want-selftest: g0:selftest-intel g0:st-port-intel g0:st-link-intel g0:st-db-intel g0:st-spad-intel
# want-selftest: g0:st-mw-intel g0:st-pingpong-intel g0:st-perf-intel g0:st-mwdata-intel
# want-selftest: g0:selftest-amd g0:st-port-amd g0:st-link-amd g0:st-db-amd g0:st-spad-amd
# want-selftest: g0:st-mw-amd g0:st-pingpong-amd g0:st-perf-amd g0:st-mwdata-amd
# want-selftest: g0:selftest-switchtec g0:st-port-switchtec g0:st-link-switchtec g0:st-db-switchtec
# want-selftest: g0:st-spad-switchtec g0:st-mw-switchtec g0:st-pingpong-switchtec g0:st-perf-switchtec
# want-selftest: g0:st-mwdata-switchtec
# want-selftest: g0:selftest-epf g0:st-port-epf g0:st-link-epf g0:st-db-epf g0:st-spad-epf
# want-selftest: g0:st-mw-epf g0:st-pingpong-epf g0:st-perf-epf g0:st-mwdata-epf
# want-selftest: g0:selftest-idt g0:st-port-idt g0:st-link-idt g0:st-db-idt g0:st-msg-idt
# want-selftest: g0:st-mw-idt g0:st-pingpong-idt g0:st-perf-idt g0:st-mwdata-idt
G=$(sed -n 's/.*sio\.guest=\([0-9]*\).*/\1/p' /proc/cmdline)
MOD=/lib/modules
DBG=/sys/kernel/debug
DEV=0000:00:10.0		# the ivshmem-doorbell function, so the NTB device
T=$DBG/ntb_tool/$DEV
SIZE=65536			# each window's test data
n=0				# the last phase asked for
. /vm/guest.sh	# res, ok, no, run
. /vm/ntb-sync.sh	# phase, dmesg_check, link_wait, pingpong, diag, net_up
. /vm/ntb-selftest.sh	# selftest_up, selftest
ME=$G				# pingpong's port

# The profiles: ports, windows per peer, doorbell bits, the port numbers
# ntb_tool shows for ports 0, 1, 2, and scratchpads or message registers.
profile() {
	case $1 in
	ivshmem) N=3 MWS=3 DB=0xffffffff PNUM="0 1 2" SPADS=10 MSGS=0 ;;
	intel) N=2 MWS=2 DB=0x7fffffff PNUM="0 1" SPADS=16 MSGS=0 ;;
	amd) N=2 MWS=2 DB=0x7fff PNUM="0 1" SPADS=8 MSGS=0 ;;
	# no port ops: the core's default, port 0 and peer port 0
	switchtec) N=2 MWS=2 DB=0xfffffff PNUM="0 0" SPADS=128 MSGS=0 ;;
	epf) N=2 MWS=4 DB=0x3fffffff PNUM="0 0" SPADS=16 MSGS=0 ;;
	idt) N=3 MWS=3 DB=0xffffffff PNUM="0 2 4" SPADS=0 MSGS=4 ;;
	esac
}
pnum() { echo $PNUM | cut -d' ' -f$(($1 + 1)); }
pidx() { if [ "$1" -lt "$G" ]; then echo "$1"; else echo $(($1 - 1)); fi; }
peers() { p=0; while [ $p -lt $N ]; do [ $p = "$G" ] || echo $p; p=$((p + 1)); done; }
# pattern S R: the bytes port S writes to port R, in /tmp/pat.S.R
pattern() {
	head -c $SIZE /dev/zero | tr '\0' "\\$(printf %03o $((0100 + $1 * 8 + $2)))" >/tmp/pat.$1.$2
}
# win R S: the window R offers S (inbound), and the outbound window of S
# that reaches it
inwin() { if [ $N = 2 ]; then echo 1; else echo $((($1 + $2) % MWS)); fi; }
outwin() { echo $(($(pidx "$1") * MWS + $(inwin "$1" "$G"))); }

load() {	# PROFILE: the modules loaded, ntb_tool's links up
	insmod $MOD/ntb.ko && insmod $MOD/ntb_hw_ivshmem.ko profile=$1 ports=$N &&
		[ -e /sys/bus/ntb/devices/$DEV ] && insmod $MOD/ntb_tool.ko &&
		echo Y >$T/link && link_wait Y $(peers)
}
# tool_check: what ntb_tool shows is the profile's
tool_check() {
	[ "$(cat $T/port)" = "$(pnum "$G")" ] || { echo "port $(cat $T/port)"; return 1; }
	[ $(($(cat $T/db_valid_mask))) = $((DB)) ] || { echo "doorbells $(cat $T/db_valid_mask)"; return 1; }
	for p in $(peers); do
		[ "$(cat $T/peer$(pidx $p)/port)" = "$(pnum $p)" ] ||
			{ echo "peer $p: port $(cat $T/peer$(pidx $p)/port)"; return 1; }
	done
	p=$(peers | head -n 1)
	if [ $SPADS = 0 ]; then
		[ ! -e $T/spad0 ] || { echo "scratchpads"; return 1; }
	else
		[ -e $T/spad$((SPADS - 1)) ] && [ ! -e $T/spad$SPADS ] || { echo "not $SPADS scratchpads"; return 1; }
	fi
	if [ $MSGS = 0 ]; then
		[ ! -e $T/msg0 ] || { echo "message registers"; return 1; }
	else
		[ -e $T/msg$((MSGS - 1)) ] && [ -e $T/peer$(pidx $p)/msg0 ] || { echo "no message registers"; return 1; }
	fi
	[ -e $T/peer$(pidx $p)/mw_trans$((MWS - 1)) ] && [ ! -e $T/peer$(pidx $p)/mw_trans$MWS ] ||
		{ echo "not $MWS windows"; return 1; }
}
spads() {
	for p in $(peers); do echo $((0x5100 + G * 16 + p)) >$T/peer$(pidx $p)/spad$G; done
	phase "spad-$1"
	bad=
	for p in $(peers); do [ $(($(cat $T/spad$p))) = $((0x5100 + p * 16 + G)) ] || bad="$bad $p"; done
	if [ -z "$bad" ]; then ok "spad-$1"; else no "spad-$1" "wrong scratchpad from port(s)$bad"; fi
}
# msgs_take REG [COUNT]: COUNT messages (default: one per peer) of register
# REG, as "PIDX VALUE" lines in /tmp/msg.REG, the register cleared after each
msgs_take() {
	: >/tmp/msg.$1
	for i in $(peers | head -n "${2:-$N}"); do
		v=$(cat $T/msg$1)
		echo "${v#*<-} ${v%<-*}" >>/tmp/msg.$1
		echo "c $((1 << (16 + $1)))" >$T/msg_sts
	done
}
# msgs_drain: every inbound register cleared, however many wait
msgs_drain() {
	i=0
	while [ $(($(cat $T/msg_sts) & 0xf0000)) != 0 ] && [ $i -lt 8 ]; do
		echo "c 0xf000f" >$T/msg_sts
		i=$((i + 1))
	done
	echo "c 0xf" >$T/msg_sts
}
# k PORT: this port's index among PORT's peers: the register it writes
# there, so that two senders never contend for one (a register holds one
# message: the second would not be delivered, as on IDT)
k() { if [ "$G" -lt "$1" ]; then echo "$G"; else echo $((G - 1)); fi; }
msgs() {
	echo "c 0xf000f" >$T/msg_sts
	for p in $(peers); do echo $((0x5100 + G * 16 + p)) >$T/peer$(pidx $p)/msg$(k $p); done
	phase "msg-$1"
	bad=
	for p in $(peers); do
		msgs_take "$(pidx $p)" 1
		sed 's/^/    | /' /tmp/msg.$(pidx $p)
		grep -q "^$(pidx $p) $(printf 0x%08x $((0x5100 + p * 16 + G)))\$" /tmp/msg.$(pidx $p) ||
			bad="$bad $p"
	done
	if [ -z "$bad" ]; then ok "msg-$1"; else no "msg-$1" "no message from port(s)$bad"; fi
	# a second message to a register the peer has not cleared is not
	# delivered: the sender's status bit says so (IDT's way)
	p=$(peers | head -n 1)
	r=$((2 + $(k $p)))
	phase "msg-full-$1"
	echo 1 >$T/peer$(pidx $p)/msg$r && echo 2 >$T/peer$(pidx $p)/msg$r
	if [ $(($(cat $T/msg_sts) & (1 << r))) != 0 ]; then ok "msg-full-$1"; else no "msg-full-$1" "status $(cat $T/msg_sts)"; fi
	phase "msg-full-done-$1"
	msgs_drain
}
doorbells() {
	echo "c $DB" >$T/db_mask
	phase "db-unmasked-$1"
	echo "s $((1 << G))" >$T/peer_db
	phase "db-rung-$1"
	want=0
	for p in $(peers); do want=$((want | 1 << p)); done
	if timeout 30 sh -c "echo $want > $T/db_event" && echo "c $want" >$T/db && [ $(($(cat $T/db))) = 0 ]; then
		ok "db-$1"
	else
		no "db-$1" "doorbells $(cat $T/db), wanted $want"
	fi
}
# windows: each port offers each peer a window and writes the peer's; on
# idt the receiver sends the buffer's bus address in two messages and the
# sender translates its outbound window there. A register holds one
# message: the receiver with peer index K at the sender uses registers 2K
# and 2K + 1 (three ports: 0 to 3).
windows() {
	for p in $(peers); do
		f=$T/peer$(pidx $p)/mw_trans$(inwin "$G" $p)
		echo $SIZE >$f || no "mw-$1" "inbound window for port $p"
		[ $MSGS = 0 ] && continue
		a=$(sed -n 's/^DMA Address[^0-9]*//p' $f)
		k=$(k $p)
		echo $((a & 0xffffffff)) >$T/peer$(pidx $p)/msg$((2 * k))
		echo $((a >> 32)) >$T/peer$(pidx $p)/msg$((2 * k + 1))
	done
	phase "mw-in-$1"
	for p in $(peers); do
		w=$(outwin $p)
		a=0
		if [ $MSGS != 0 ]; then
			k=$(pidx $p)
			msgs_take $((2 * k)) 1
			lo=$(sed -n "s/^$k //p" /tmp/msg.$((2 * k)))
			msgs_take $((2 * k + 1)) 1
			hi=$(sed -n "s/^$k //p" /tmp/msg.$((2 * k + 1)))
			a=$(((hi << 32) | lo))
			echo "    | port $p's buffer for port $G at bus address $(printf %#x $a)"
		fi
		pattern "$G" $p
		echo "$a:$SIZE" >$T/peer$(pidx $p)/peer_mw_trans$w &&
			dd if=/tmp/pat.$G.$p of=$T/peer$(pidx $p)/peer_mw$w bs=4096 conv=notrunc 2>/dev/null ||
			no "mw-$1" "writing port $p's window $w (at $a)"
	done
	phase "mw-out-$1"
	bad=
	for p in $(peers); do
		pattern $p "$G"
		dd if=$T/peer$(pidx $p)/mw$(inwin "$G" $p) of=/tmp/got bs=4096 count=$((SIZE / 4096)) 2>/dev/null &&
			cmp /tmp/got /tmp/pat.$p.$G || bad="$bad $p"
	done
	if [ -z "$bad" ]; then ok "mw-$1"; else no "mw-$1" "data from port(s)$bad did not arrive"; diag; fi
	for p in $(peers); do
		echo 0 >$T/peer$(pidx $p)/mw_trans$(inwin "$G" $p)
		echo 0:0 >$T/peer$(pidx $p)/peer_mw_trans$(outwin $p)
	done
}
perf() {
	insmod $MOD/ntb_perf.ko max_mw_size=1048576 total_order=20 || no "perf-$1" "insmod ntb_perf"
	phase "perf-loaded-$1"
	bad=
	for p in $(peers); do
		if timeout 120 sh -c "echo $(pidx $p) > $DBG/ntb_perf/$DEV/run"; then
			st=$(cat $DBG/ntb_perf/$DEV/run)
			echo "$st" | sed 's/^/    | /'
			echo "$st" | grep -q 'copied 1048576 bytes' || bad="$bad $p"
		else
			bad="$bad $p"
			sed 's/^/    | /' $DBG/ntb_perf/$DEV/info
		fi
	done
	phase "perf-done-$1"
	rmmod ntb_perf
	if [ -z "$bad" ]; then ok "perf-$1"; else no "perf-$1" "no run to port(s)$bad"; diag; fi
}
# sntb: smartio_ntb over idt between ports 0 and 1, from a 64-bit process,
# then a 32-bit one where the build has one
sntb() {
	phase sntb-idt-early-send
	if [ "$G" -lt 2 ]; then
		insmod $MOD/smartio_ntb.ko
		[ "$G" = 0 ] || run sntb-idt-early ntb-uapi msg-early-send "$(pnum 0)" 0x5105e
	fi
	# guest 0 opens only now: guest 1's message waited in its register
	phase sntb-idt-early
	[ "$G" != 0 ] || run sntb-idt-early ntb-uapi msg-early "$(pnum 1)" 0x5105e
	phase sntb-idt
	if [ "$G" -lt 2 ]; then
		run sntb-idt ntb-uapi outbound "$(pnum $((1 - G)))"
	fi
	phase sntb-idt-32
	if [ "$G" -lt 2 ]; then
		if [ -x /prog/ntb-uapi32 ]; then
			run sntb-idt-32 ntb-uapi32 outbound "$(pnum $((1 - G)))"
		else
			# what the machine can install is no reason to pass unrun
			no sntb-idt-32 "no 32-bit ntb-uapi in this build (tools/install-deps.sh installs gcc-multilib)"
		fi
		rmmod smartio_ntb
	fi
	phase sntb-idt-done
}
# refuse PROFILE ARGS EXPECT: loading with settings the profile cannot have
# fails, and the kernel's log names the parameter
refuse() {
	insmod $MOD/ntb.ko || return 1
	if insmod $MOD/ntb_hw_ivshmem.ko profile=$1 $2 2>/dev/null; then
		rmmod ntb_hw_ivshmem
		echo "profile=$1 $2 loaded"
	fi
	rmmod ntb
	dmesg | grep "$3" | tail -n 1 | grep .
}
# one PROFILE: the profile's run; the guests beyond its ports wait
one() {
	pr=$1
	profile "$pr"
	phase "clear-$pr"
	# BAR2 holds the last profile's layout: cleared once everyone unloaded
	[ "$G" != 0 ] || ntb-scribble /sys/bus/pci/devices/$DEV/resource2 clear
	phase "load-$pr"
	if [ "$G" -ge $N ]; then
		# its function is no port of this NTB: refused, no device
		insmod $MOD/ntb.ko && insmod $MOD/ntb_hw_ivshmem.ko profile=$pr ports=$N &&
			[ ! -e /sys/bus/ntb/devices/$DEV ] && dmesg | grep -q "beyond the $N ports" &&
			ok "beyond-$pr" || no "beyond-$pr" "$(dmesg | grep ntb_hw_ivshmem | tail -n 2)"
		rmmod ntb_hw_ivshmem; rmmod ntb
	else
		run "load-$pr" load "$pr"
		dmesg | grep 'NTB port' | tail -n 1 | sed 's/^/    | /'
		run "tool-$pr" tool_check
	fi
	phase "tool-$pr"
	if [ $SPADS != 0 ]; then
		if [ "$G" -lt $N ]; then spads "$pr"; else phase "spad-$pr"; fi
	fi
	[ $MSGS = 0 ] || msgs "$pr"
	if [ "$G" -lt $N ]; then doorbells "$pr"; else phase "db-unmasked-$pr"; phase "db-rung-$pr"; fi
	if [ "$G" -lt $N ]; then
		windows "$pr"
	else
		phase "mw-in-$pr"; phase "mw-out-$pr"
	fi
	phase "mw-done-$pr"
	[ "$G" -ge $N ] || rmmod ntb_tool
	if [ "$G" -lt $N ]; then perf "$pr"; pingpong "pingpong-$pr"; else
		for x in perf-loaded-$pr perf-done-$pr pingpong-$pr-load pingpong-$pr-run pingpong-$pr-stop; do
			phase "$x"
		done
	fi
	[ "$ST" = 0 ] || selftest "$pr"
	[ "$pr" != idt ] || sntb
	phase "unload-$pr"
	[ "$G" -ge $N ] || { rmmod ntb_hw_ivshmem && rmmod ntb; } || no "unload-$pr" "$(lsmod | grep ntb)"
}

# picked PROFILE: PROFILE is one to run (sio.profiles=; all without it)
PROFILES=$(sed -n 's/.*sio\.profiles=\([a-z,]*\).*/\1/p' /proc/cmdline)
picked() { case ",${PROFILES:-$1}," in *,$1,*) ;; *) return 1 ;; esac; }

mount -t debugfs none $DBG
ST=0
case ",$(sed -n 's/.*sio\.variant=\([a-z0-9,-]*\).*/\1/p' /proc/cmdline)," in
*,selftest,*) ST=1; selftest_up ;;
esac
! picked ivshmem || one ivshmem
! picked intel || run refuse-intel refuse intel ports=3 'ports=3: profile=intel has exactly 2 ports'
! picked intel || one intel
! picked amd || one amd
! picked switchtec || one switchtec
! picked epf || one epf
! picked idt || run refuse-idt refuse idt page_xlat=1 'page_xlat=1: profile=idt translates outbound only'
! picked idt || one idt
dmesg_check dmesg
