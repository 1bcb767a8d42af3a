# SPDX-License-Identifier: MIT
# The NTB suite's guest side (run-ntb.sh), run by /init in each guest:
# sio.guest=N on the kernel command line says which (its ivshmem peer id, so
# its NTB port). One client binds to the NTB device at a time, so the
# clients take turns, phase by phase, every guest alike. The life of the
# fabric, by ports:
#   0 1 2    the upstream clients: ntb_tool, ntb_perf, ntb_pingpong, ntb_transport;
#            then smartio_ntb: `smartio ntb` ping and bench, a window of 1
#            translated onto 0's edu BAR0 (emulated forwarding), ntb-uapi's
#            bad input
#   0 1 -    2 is killed while it stores into a window: 0 and 1, which hold its
#            window mapped, see it go and its pages read all ones; they carry on
#   0 1 2    guest 2 boots again, a new QEMU and kernel: back on port 2
#   0 - 2    1 is reset (a reboot in place, same port) while it writes windows
#   0 1 2    1 is back, a new kernel on the same port; then the hardware driver
#            is unloaded under a process that holds smartio_ntb's windows, loaded
#            again, and unloaded under a bound ntb_perf; dmesg is read
#   - 1 2    0, its driver unloaded, scribbles over BAR2's descriptor and
#            every slot (ntb-scribble) while 1 and 2 hold their link up: they
#            see it go down, and their kernels report nothing else; then 0
#            clears BAR2 and loads the driver without ports=: it lays out nothing
# Port 3 is never there: a peer that does not exist is a link that stays
# down. A guest that joins late (2 booted again, 1 after its reset) asks
# run-ntb.sh which phase the others are at.
#
# Where a kernel's dma-iommu serves guest 0's PCI function directly (6.12 on:
# variant dma-iommu), ntb_tool and ntb_perf, which allocate their inbound
# buffers on that function, get none that a peer reaches (docs/ntb.md): port
# 0 checks that its driver said so and that their windows are refused, and
# its peers run ntb_perf to the others only. Up to 6.11 (variant dma-ops) the
# driver's DMA ops serve them there too, and every window is checked.
#
# host: kill-2 join reset-1
# want: g0:load g1:load g2:load g2b:load g0:port g1:port g2:port g2b:port g0:pci-dma-ops
# want-bar64: g0:bar64 g1:bar64 g2:bar64 g2b:bar64
# want: g0:params-load g1:params-load g2:params-load g0:params-write g1:params-write g2:params-write
# want: g0:tool-link g1:tool-link g2:tool-link g0:tool-spad g1:tool-spad g2:tool-spad
# want: g0:tool-db g1:tool-db g2:tool-db g1:tool-mw g2:tool-mw
# want: g0:tool-db-burst g1:tool-db-burst g2:tool-db-burst
# want: g0:perf g1:perf g2:perf g0:pingpong g1:pingpong g2:pingpong
# want: g0:transport g1:transport g2:transport g0:dmesg-a g1:dmesg-a g2:dmesg-a
# want: g0:sntb-probe-fail g1:sntb-probe-fail g2:sntb-probe-fail
# want: g0:sntb-load g1:sntb-load g2:sntb-load g0:sntb-ping g1:sntb-ping g2:sntb-ping
# want: g0:sntb-echo g1:sntb-echo g2:sntb-echo g0:sntb-eventfd g1:sntb-eventfd g2:sntb-eventfd
# want: g0:sntb-bench g1:sntb-bench g2:sntb-bench g0:sntb-serve g1:sntb-serve g2:sntb-serve
# want: g0:sntb-fwd g0:sntb-fwd-dmesg g1:sntb-fwd-store g1:sntb-fwd-store-gone
# want: g0:sntb-bad g1:sntb-bad g2:sntb-bad g0:sntb-bad-32 g1:sntb-bad-32 g2:sntb-bad-32 g0:sntb-death-releases g1:sntb-death-releases
# want: g2:sntb-death-releases g0:sntb-bounce g2:sntb-bounce g1:sntb-bounce-reload
# want: g0:sntb-unload g1:sntb-unload g2:sntb-unload
# want: g0:kill-load g1:kill-load g2:kill-load
# want: host:guest2-killed g0:kill-link-down g1:kill-link-down g1:kill-mw
# want: g0:kill-perf g0:kill-pingpong g1:kill-pingpong
# want: g2b:restarted g0:join-link g1:join-link g2b:join-link g1:join-mw g2b:join-mw
# want: g0:dmesg-b g1:dmesg-b g2b:dmesg-b host:guest1-reset
# want: g0:reset-link-down g2b:reset-link-down g1:restarted g0:reset-link-up g1:reset-link-up g2b:reset-link-up
# want: g1:reset-mw g2b:reset-mw
# want: g0:unbind-load g1:unbind-load g2b:unbind-load g0:sntb-rmmod-busy g1:sntb-rmmod-busy
# want: g2b:sntb-rmmod-busy g0:unbind-hw g1:unbind-hw g2b:unbind-hw g0:sntb-unbind g1:sntb-unbind
# want: g2b:sntb-unbind g0:sntb-unload-after g1:sntb-unload-after g2b:sntb-unload-after
# want: g0:reload g1:reload g2b:reload g0:unload-bound g1:unload-bound g2b:unload-bound
# want: g0:dmesg g1:dmesg g2b:dmesg
# want: g1:scribble-up g2b:scribble-up g0:scribble g1:scribble-link-down g2b:scribble-link-down
# want: g1:scribble-seen g2b:scribble-seen g1:scribble-unload g2b:scribble-unload
# want: g0:scribble-dmesg g1:scribble-dmesg g2b:scribble-dmesg g0:no-surprise
# want-dma-ops: g0:tool-mw g0:kill-mw g0:join-mw g0:reset-mw g1:kill-perf
# want-dma-iommu: g0:tool-mw-refused g0:kill-mw-refused g0:join-mw-refused
# want-dma-iommu: g0:reset-mw-refused g0:perf-in-refused g0:kill-perf-in-refused
G=$(sed -n 's/.*sio\.guest=\([0-9]*\).*/\1/p' /proc/cmdline)
MOD=/lib/modules
DBG=/sys/kernel/debug
DEV=0000:00:10.0		# the ivshmem-doorbell function, so the NTB device
EDU=0000:00:09.0		# QEMU's edu, guest 0 only (run-ntb.sh)
PORTS=4
# ntb_perf kmallocs a source buffer as large as the window: past 4 MiB the
# page allocator warns (a region of 64 MiB or more has 16 MiB windows)
PERF_MW=4194304
T=$DBG/ntb_tool/$DEV
n=0				# the last phase asked for
# the host's expectation (run-ntb.sh's SIO_NTB_VARIANT): with dma-iommu,
# port 0's ntb_tool and ntb_perf get no inbound buffers (see above)
VARIANTS=$(sed -n 's/.*sio\.variant=\([a-z0-9,-]*\).*/\1/p' /proc/cmdline)
variant() { case ",$VARIANTS," in *",$1,"*) return 0 ;; esac; return 1; }
VARIANT=dma-ops			# how the DMA API serves port 0's function
! variant dma-iommu || VARIANT=dma-iommu
NOIN=				# the port where they get none
[ "$VARIANT" != dma-iommu ] || NOIN=0
# what ntb_hw_ivshmem says at probe where the function's DMA ops go unused
# (read once, at the first load: the debug messages soon push it out of the
# kernel's log)
NOOPS="does not use the PCI function's DMA ops"
SAID=

. /vm/guest.sh	# res, ok, no, run
. /vm/ntb-sync.sh	# phase, hello: the host's phases
pidx() { if [ "$1" -lt "$ME" ]; then echo "$1"; else echo $(($1 - 1)); fi; }
peers() { p=0; while [ $p -lt $PORTS ]; do [ $p = "$ME" ] || echo $p; p=$((p + 1)); done; }
# pattern S R SIZE: the bytes port S writes to port R, in /tmp/pat.S.R
pattern() {
	head -c "$3" /dev/zero | tr '\0' "\\$(printf %03o $((0100 + $1 * 8 + $2)))" >/tmp/pat.$1.$2
}
tool_load() {
	insmod $MOD/ntb_tool.ko && echo Y >$T/link && link_wait Y "$@"
}
# mw_in PORT SIZE: offer PORT an inbound window (window (me + PORT) % PORTS)
mw_in() {
	echo "$2" >$T/peer$(pidx "$1")/mw_trans$((($1 + ME) % PORTS))
}
# mw_out PORT SIZE: write our pattern into PORT's window for us
mw_out() {
	w=$(($(pidx "$1") * PORTS + ($1 + ME) % PORTS))
	pattern "$ME" "$1" "$2"
	echo "0:$2" >$T/peer$(pidx "$1")/peer_mw_trans$w &&
		dd if=/tmp/pat.$ME.$1 of=$T/peer$(pidx "$1")/peer_mw$w bs=4096 conv=notrunc 2>/dev/null
}
# mw_check PORT SIZE: what PORT wrote arrived in our window for it
mw_check() {
	pattern "$1" "$ME" "$2"
	dd if=$T/peer$(pidx "$1")/mw$((($1 + ME) % PORTS)) of=/tmp/got bs=4096 count=$(($2 / 4096)) 2>/dev/null &&
		cmp /tmp/got /tmp/pat.$1.$ME
}
mw_clear() {
	for p in "$@"; do
		echo 0 >$T/peer$(pidx "$p")/mw_trans$((($p + ME) % PORTS))
		echo 0:0 >$T/peer$(pidx "$p")/peer_mw_trans$(($(pidx "$p") * PORTS + ($p + ME) % PORTS))
	done
	return 0
}
# windows NAME SIZE PORT...: both ways with each PORT, data checked by the
# receiver; on port $NOIN, whose ntb_tool gets no inbound buffer, only out,
# and NAME-refused: every inbound window refused, for the reason the driver gave
windows() {
	name=$1 size=$2; shift 2
	if [ "$ME" = "$NOIN" ]; then
		took=
		for p in "$@"; do mw_in "$p" "$size" 2>/dev/null && took="$took $p"; done
		if [ -z "$took" ] && [ "$SAID" = dma-iommu ]; then
			ok "$name-refused"
		else
			no "$name-refused" "inbound windows for port(s)${took:- none}; the driver said ${SAID:-nothing}"
		fi
	else
		for p in "$@"; do mw_in "$p" "$size" || no "$name" "inbound window for port $p"; done
	fi
	phase "$name-in"
	for p in "$@"; do mw_out "$p" "$size" || no "$name" "writing port $p's window"; done
	phase "$name-out"
	if [ "$ME" = "$NOIN" ]; then
		echo "    | no data to check here: port $ME has no inbound window (its peers check its stores)"
		mw_clear "$@"
		return
	fi
	bad=
	for p in "$@"; do mw_check "$p" "$size" || bad="$bad $p"; done
	if [ -z "$bad" ]; then ok "$name"; else no "$name" "data from port(s)$bad did not arrive"; diag; fi
	mw_clear "$@"
}
# inbound PORT...: the PORTs whose ntb_perf can have an inbound buffer
inbound() {
	for p in "$@"; do
		if [ "$p" = "$NOIN" ]; then
			echo "    | no ntb_perf run to port $p: its ntb_perf gets no inbound buffer (docs/ntb.md)" >&2
		else
			echo "$p"
		fi
	done
}
# inbuf_refused NAME: since its load (the mark NAME in the kernel's log),
# ntb_perf here said an inbound buffer of it was refused (within 20 s), and
# has none for any peer
inbuf_refused() {
	i=0
	while ! dmesg | sed -n "/sio-suite: $1: ntb_perf loaded/,\$p" | grep -q inbuf; do
		i=$((i + 1))
		[ $i -lt 100 ] || return 1
		sleep 0.2
	done
	dmesg | sed -n "/sio-suite: $1: ntb_perf loaded/,\$p" | grep inbuf | tail -n 2 |
		sed 's/^/    | /'
	! grep 'In buffer addr 0x' $DBG/ntb_perf/$DEV/info
}
perf_run() {	# NAME PORT...: ntb_perf from here to each PORT
	name=$1; shift
	# shellcheck disable=SC2046
	set -- $(inbound "$@")
	echo "sio-suite: $name: ntb_perf loaded" >/dev/kmsg
	insmod $MOD/ntb_perf.ko max_mw_size=$PERF_MW total_order=22 || { no "$name" "insmod ntb_perf"; return; }
	phase "$name-loaded"
	bad=
	for p in "$@"; do
		if timeout 60 sh -c "echo $(pidx "$p") > $DBG/ntb_perf/$DEV/run"; then
			st=$(cat $DBG/ntb_perf/$DEV/run)
			echo "$st" | sed 's/^/    | /'
			mbs=$(echo "$st" | sed -n 's/.*copied \([0-9]*\) bytes.* \([0-9]*\) MBytes\/s.*/\1 \2/p')
			[ "${mbs%% *}" = 4194304 ] || bad="$bad $p"
			echo "SIO-VM MEASURE ntb_perf port $ME -> port $p: 4 MiB in ${mbs##* } MB/s (TCG)"
		else
			bad="$bad $p"
			sed 's/^/    | /' $DBG/ntb_perf/$DEV/info
		fi
	done
	[ -z "$bad" ] || diag
	if [ "$ME" = "$NOIN" ]; then
		if inbuf_refused "$name" && [ "$SAID" = dma-iommu ]; then
			ok "$name-in-refused"
		else
			no "$name-in-refused" "ntb_perf said nothing of its inbound buffers"
		fi
	fi
	phase "$name-done"
	rmmod ntb_perf
	if [ $# = 0 ]; then
		echo "    | no port to run ntb_perf to"
	elif [ -z "$bad" ]; then ok "$name"; else no "$name" "no run to port(s)$bad"; fi
}
# writing NAME PORT...: write our windows of each PORT until killed or reset
writing() {
	name=$1; shift
	for p in "$@"; do mw_in "$p" 65536; done
	i=0
	while [ $i -lt 300 ]; do for p in "$@"; do mw_out "$p" 65536; done; i=$((i + 1)); done
	no "$name" "guest $G should have been stopped"
}
# unload PORT...: unload the hardware driver under a bound client that holds
# windows: ntb_perf, its buffers set up by a run to each PORT (ntb_tool of
# 6.1 cannot be removed with windows set: it removes their debugfs files
# after their directory)
unload() {
	phase unload-tool
	rmmod ntb_tool
	insmod $MOD/ntb_perf.ko max_mw_size=$PERF_MW total_order=20
	phase unload
	for p in $(inbound "$@"); do
		timeout 60 sh -c "echo $(pidx "$p") > $DBG/ntb_perf/$DEV/run" || no unload-bound "no ntb_perf run to port $p"
	done
	phase unload-runs
	if rmmod ntb_hw_ivshmem && [ ! -e /sys/bus/ntb/devices/$DEV ] && rmmod ntb_perf && rmmod ntb; then
		ok unload-bound
	else
		no unload-bound "$(lsmod | grep ntb)"
	fi
	dmesg_check dmesg
	phase end
}
# scribble: port 0 turns hostile. Its driver unloaded (so that BAR2 can be
# mapped through sysfs), it rewrites BAR2's descriptor and every slot for 5 s
# (ntb-scribble) while ports 1 and 2, loaded again, hold their link up: they
# must take it down and say why, and report nothing else; they unload after.
scribble_load() {
	insmod $MOD/ntb.ko && insmod $MOD/ntb_hw_ivshmem.ko ports=$PORTS && tool_load "$@"
}
scribble() {
	phase scribble
	[ "$ME" = 0 ] || run scribble-up scribble_load $((3 - ME))
	phase scribble-go
	if [ "$ME" = 0 ]; then
		run scribble ntb-scribble /sys/bus/pci/devices/$DEV/resource2 5
	else
		run scribble-link-down link_wait N $((3 - ME))
		dmesg | grep 'rewritten by another guest' | sed 's/^/    | /'
		dmesg | grep -q 'rewritten by another guest' && ok scribble-seen ||
			no scribble-seen "no word of BAR2 rewritten"
	fi
	phase scribble-done
	if [ "$ME" != 0 ]; then
		rmmod ntb_tool && rmmod ntb_hw_ivshmem && rmmod ntb && ok scribble-unload ||
			no scribble-unload "$(lsmod | grep ntb)"
	fi
	dmesg_check scribble-dmesg
	phase surprise
	[ "$ME" != 0 ] || run no-surprise no_surprise
}
# no_surprise: loaded without ports= on an empty BAR2, the driver binds
# nothing and writes nothing (the region may be meant for shmwin or a lender)
no_surprise() {
	r=/sys/bus/pci/devices/$DEV/resource2
	ntb-scribble $r clear && insmod $MOD/ntb.ko && insmod $MOD/ntb_hw_ivshmem.ko || return 1
	bad=
	[ ! -e /sys/bus/ntb/devices/$DEV ] || bad="an NTB device"
	ntb-scribble $r is-clear || bad="$bad, BAR2 written"
	dmesg | grep 'ports= was not given' || bad="$bad, no word of why"
	rmmod ntb_hw_ivshmem && rmmod ntb
	[ -z "$bad" ] || { echo "without ports=: $bad"; return 1; }
}

# sntb_links PORT...: smartio_ntb sees the link with each PORT up (bounded)
sntb_links() {
	for p in "$@"; do
		i=0
		while ! smartio ntb status 2>/dev/null | grep -q "port $p, link up"; do
			i=$((i + 1))
			[ $i -lt 300 ] || { echo "smartio_ntb: no link with port $p within 60 s"; return 1; }
			sleep 0.2
		done
	done
}
# sntb_load PORT...: smartio_ntb bound, its links with each PORT up
sntb_load() {
	insmod $MOD/smartio_ntb.ko && [ -c /dev/smartio-ntb0 ] && sntb_links "$@"
}
# started LOG WHAT: a background program says it started (within 30 s)
started() {
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.2; i=$((i + 1)); done
}
# waited NAME PID LOG: the background check PID passed
waited() {
	if wait "$2"; then ok "$1"; else no "$1" "exit $?"; fi
	sed 's/^/    | /' "$3"
}
# sntb: smartio_ntb's user interface between the ports, through `smartio ntb`
# (ping, bench: data written by one guest, checked by the other) and ntb-uapi
# (eventfds, bad input, a process that dies holding windows)
sntb() {
	NEXT=$(((ME + 1) % 3))
	phase sntb
	# a probe that fails after its context is set, its link work queued
	# (test-only parameters): nothing of it runs once the module is gone
	if insmod $MOD/smartio_ntb.ko fail_probe_at=1 link_delay_ms=2000 && [ ! -e /dev/smartio-ntb0 ] &&
		rmmod smartio_ntb; then
		sleep 3
		dmesg_check sntb-probe-fail
	else
		no sntb-probe-fail "$(dmesg | grep smartio | tail -n 3)"
	fi
	run sntb-load sntb_load $PEERS
	smartio ntb status | sed 's/^/    | /'
	ntb-uapi eventfd "$ME" 5 >/tmp/efd.log 2>&1 &
	efd=$!
	smartio ntb ping --echo --count 20 >/tmp/echo.log 2>&1 &
	echo=$!
	started /tmp/echo.log 'answers'
	phase sntb-ping
	run sntb-ping smartio ntb ping $NEXT --count 20 &&
		sed -n "s/^ping port \(.*\)/SIO-VM MEASURE smartio ntb ping port $ME -> port \1 (TCG)/p" /tmp/out
	waited sntb-echo $echo /tmp/echo.log
	waited sntb-eventfd $efd /tmp/efd.log
	phase sntb-bench
	smartio ntb bench --serve --rounds 8 >/tmp/serve.log 2>&1 &
	serve=$!
	started /tmp/serve.log 'serves'
	phase sntb-bench-go
	bad=
	for p in $PEERS; do
		smartio ntb bench "$p" --rounds 4 >/tmp/bench.log 2>&1 || bad="$bad $p"
		sed 's/^/    | /' /tmp/bench.log
		sed -n "s/^bench \(port .*\), every.*/SIO-VM MEASURE smartio ntb bench port $ME -> \1 (TCG)/p" /tmp/bench.log
	done
	if [ -z "$bad" ]; then ok sntb-bench; else no sntb-bench "to port(s)$bad"; diag; fi
	waited sntb-serve $serve /tmp/serve.log
	# port 0 translates a window of port 1 onto BAR0 of its edu (emulated
	# forwarding in ntb_hw_ivshmem); port 1 stores through its outbound
	# window, and the value reaches edu's register
	phase sntb-fwd
	if [ "$ME" = 0 ]; then
		echo 1 >/sys/module/ntb_hw_ivshmem/parameters/bar_fwd
		ntb-uapi fwd-lend 1 $EDU >/tmp/fwd.log 2>&1 &
		fwd=$!
		started /tmp/fwd.log '^forwarding'
	fi
	phase sntb-fwd-store
	[ "$ME" != 1 ] || run sntb-fwd-store ntb-uapi fwd-store 0
	phase sntb-fwd-check
	if [ "$ME" = 0 ]; then
		kill -USR1 $fwd
		started /tmp/fwd.log '^checked'
		# the target goes while forwarding: its stores are dropped
		echo 1 >/sys/bus/pci/devices/$EDU/remove
	fi
	phase sntb-fwd-gone
	[ "$ME" != 1 ] || run sntb-fwd-store-gone ntb-uapi fwd-store 0 0x1234
	phase sntb-fwd-gone-check
	if [ "$ME" = 0 ]; then
		kill -USR1 $fwd
		waited sntb-fwd $fwd /tmp/fwd.log
		dmesg | grep -q 'by emulated forwarding' && dmesg | grep -q 'is removed: the peer.s stores are dropped' &&
			ok sntb-fwd-dmesg || no sntb-fwd-dmesg "the log does not say the forwarding is emulated, or its target gone"
		echo 0 >/sys/module/ntb_hw_ivshmem/parameters/bar_fwd
	fi
	phase sntb-bad
	run sntb-bad ntb-uapi bad $NEXT
	# the same from a 32-bit process, where the build has one (gcc-multilib)
	if [ -x /prog/ntb-uapi32 ]; then
		run sntb-bad-32 ntb-uapi32 bad $NEXT
	else
		ok sntb-bad-32
		echo "    | no 32-bit ntb-uapi in this build (apt-get install gcc-multilib)"
	fi
	# a process that dies (SIGKILL) holding every window for NEXT: they are free again
	ntb-uapi take $NEXT >/tmp/take1.log 2>&1
	ntb-uapi take $NEXT >/tmp/take2.log 2>&1
	cat /tmp/take1.log /tmp/take2.log | sed 's/^/    | /'
	[ "$(grep -c '^ok take-every-window' /tmp/take1.log /tmp/take2.log | grep -c ':1$')" = 2 ] &&
		ok sntb-death-releases || no sntb-death-releases "the windows of a dead process stayed taken"
	# port 1 goes down and comes back (smartio_ntb reloaded) faster than
	# the link work of 0 and 2 runs (held back by a test-only parameter),
	# while they hold its window mapped: the link generation moves anyway.
	# Their wait for it starts at the phase (SIGUSR1), when port 1 goes,
	# not when they map: one guest may get to the phase minutes after
	# another (TCG on a loaded host).
	# Every guest's take has exited first: a peer's buffer translated
	# while this guest maps changes the window's size between the
	# PEER_MW ioctl and mmap (EINVAL, as it should).
	phase sntb-bounce-map
	P=/sys/module/smartio_ntb/parameters/link_delay_ms
	if [ "$ME" != 1 ]; then
		echo 8000 >$P
		ntb-uapi bounce 1 >/tmp/bounce.log 2>&1 &
		b=$!
		started /tmp/bounce.log '^bouncing'
	fi
	phase sntb-bounce
	[ "$ME" = 1 ] || kill -USR1 $b
	if [ "$ME" = 1 ]; then
		rmmod smartio_ntb && insmod $MOD/smartio_ntb.ko && ok sntb-bounce-reload ||
			no sntb-bounce-reload "$(dmesg | tail -n 3)"
	fi
	phase sntb-bounced
	if [ "$ME" != 1 ]; then
		waited sntb-bounce $b /tmp/bounce.log
		echo 0 >$P
	fi
	phase sntb-done
	rmmod smartio_ntb && ok sntb-unload || no sntb-unload "$(lsmod | grep smartio_ntb)"
}
# unbind PORT...: smartio_ntb's NTB device goes (its hardware driver unloaded)
# while a process has it open and mapped; the driver is loaded again after
unbind() {
	phase unbind
	run unbind-load sntb_load "$@"
	ntb-uapi hold "$1" dev >/tmp/hold.log 2>&1 &	# until the device goes, whatever links do
	h=$!
	started /tmp/hold.log '^holding'
	phase unbind-held
	rmmod smartio_ntb 2>/tmp/rmmod.log && no sntb-rmmod-busy "smartio_ntb unloaded under an open file" ||
		ok sntb-rmmod-busy
	rmmod ntb_hw_ivshmem && ok unbind-hw || no unbind-hw "$(lsmod | grep ntb)"
	waited sntb-unbind $h /tmp/hold.log
	rmmod smartio_ntb && ok sntb-unload-after || no sntb-unload-after "$(lsmod | grep smartio)"
	insmod $MOD/ntb_hw_ivshmem.ko ports=$PORTS && ok reload || no reload "$(dmesg | tail -n 3)"
	phase unbind-done
}

# params_load: a period of 0 (the link poll divides by heartbeat_ms) or out
# of range is refused at load, and the kernel log says the range
params_load() {
	for bad in heartbeat_ms=0 link_timeout_ms=0 heartbeat_ms=10001; do
		if insmod $MOD/ntb_hw_ivshmem.ko ports=$PORTS $bad 2>/dev/null; then
			echo "loaded with $bad"
			rmmod ntb_hw_ivshmem
			return 1
		fi
		dmesg | grep "ntb_hw_ivshmem: $bad: must be 1 to" ||
			{ echo "no word of $bad in the kernel log"; return 1; }
	done
}
# params_write: link_timeout_ms, writable at run time, refuses 0 and keeps
# its value
params_write() {
	f=/sys/module/ntb_hw_ivshmem/parameters/link_timeout_ms
	was=$(cat $f)
	if echo 0 2>/dev/null >$f; then echo "link_timeout_ms took 0"; return 1; fi
	[ "$(cat $f)" = "$was" ] || { echo "link_timeout_ms is $(cat $f), was $was"; return 1; }
	echo "$was" >$f
}

mount -t debugfs none $DBG
insmod $MOD/ntb.ko
run params-load params_load
insmod $MOD/ntb_hw_ivshmem.ko ports=$PORTS dyndbg=+p && [ -e /sys/bus/ntb/devices/$DEV ] &&
	ok load || no load "$(dmesg | grep -i ntb | tail -n 3)"
run params-write params_write
ME=$(dmesg | sed -n 's/.*NTB port \([0-9]*\) of.*/\1/p' | tail -n 1)
dmesg | grep ntb_hw_ivshmem | sed 's/^/    | /'
[ "$ME" = "$G" ] && ok port || no port "guest $G is port ${ME:-none}"
# port 0: its driver says the function's DMA ops go unused where, and only
# where, the host expects it (variant dma-iommu)
if [ "$ME" = 0 ]; then
	if dmesg | grep -q "$NOOPS"; then SAID=dma-iommu; else SAID=dma-ops; fi
	[ "$SAID" = "$VARIANT" ] && ok pci-dma-ops ||
		no pci-dma-ops "the driver behaves as $SAID, the host expects $VARIANT"
fi
bar64_check

if grep -q 'sio.join' /proc/cmdline; then
	# -- guest 2 booted again: it joins 0 and 1 on its old port, which its
	# driver finds as the killed kernel left it
	dmesg | grep -q 'restarted: its slot still holds' && ok restarted ||
		no restarted "the driver did not see port 2's slot of the killed guest"
	hello
	run join-link tool_load 0 1
	phase join
	windows join-mw 65536 0 1
elif dmesg | grep -q 'restarted: its slot still holds'; then
	# -- guest 1 after its reset: a new kernel on its old port
	ok restarted
	hello
	run reset-link-up tool_load 0 2
	phase reset-back
	windows reset-mw 65536 0 2
	rmmod ntb_tool
	unbind 0 2
	tool_load 0 2
	unload 0 2
	scribble
	exit 0
else
	PEERS=$(peers | grep -v 3)
	# -- ntb_tool: link, scratchpads, doorbells, windows both ways
	phase tool
	run tool-link tool_load $PEERS
	phase tool-up
	for p in $PEERS; do echo $((0x5100 + ME * 16 + p)) >$T/peer$(pidx $p)/spad$ME; done
	phase tool-spad
	bad=
	for p in $PEERS; do [ $(($(cat $T/spad$p))) = $((0x5100 + p * 16 + ME)) ] || bad="$bad $p"; done
	if [ -z "$bad" ]; then ok tool-spad; else no tool-spad "wrong scratchpad from port(s)$bad"; fi
	echo "c 0xffffffff" >$T/db_mask
	phase tool-db-unmasked
	echo "s $((1 << ME))" >$T/peer_db
	phase tool-db-rung
	want=0
	for p in $PEERS; do want=$((want | 1 << p)); done
	if timeout 30 sh -c "echo $want > $T/db_event" && echo "c $want" >$T/db && [ $(($(cat $T/db))) = 0 ]; then
		ok tool-db
	else
		no tool-db "doorbells $(cat $T/db), wanted $want"
	fi
	# a burst of doorbells from every peer: each interrupt polls the links
	# at once, and those polls must not count as a peer's heartbeat timeout
	downs=$(dmesg | grep -c 'link with port [0-9]* down')
	phase tool-db-burst
	i=0
	while [ $i -lt 2000 ]; do echo "s $((1 << ME))" >$T/peer_db; i=$((i + 1)); done
	phase tool-db-burst-rung
	sleep 1
	now=$(dmesg | grep -c 'link with port [0-9]* down')
	[ "$now" = "$downs" ] && ok tool-db-burst || no tool-db-burst \
		"$((now - downs)) link(s) went down under a burst of doorbells: $(dmesg | grep 'link with port [0-9]* down' | tail -n 2)"
	echo "c 0xffffffff" >$T/db
	windows tool-mw 65536 $PEERS
	phase tool-done
	rmmod ntb_tool

	# -- ntb_perf between every pair of ports, each way
	perf_run perf $PEERS
	# -- ntb_pingpong: the ports ping each other in a ring
	pingpong pingpong
	# -- ntb_transport binds (a two-port client: it warns of the other ports)
	phase transport
	insmod $MOD/ntb_transport.ko
	drv=$(readlink /sys/bus/ntb/devices/$DEV/driver)
	[ "${drv##*/}" = ntb_transport ] && ok transport || no transport "bound to '${drv##*/}'"
	phase transport-done
	# unloaded one port at a time: a peer's link change during its removal
	# schedules one of its works on memory it then frees (docs/ntb.md)
	for p in 0 1 2; do
		[ "$ME" = $p ] && rmmod ntb_transport
		phase transport-gone-$p
	done

	sntb

	# -- guest 2 is killed while it stores into port 0's window; 0 and 1, which
	# hold its window mapped (smartio_ntb), see it go, then go on
	run kill-load sntb_load $PEERS
	dmesg_check dmesg-a
	if [ "$ME" = 2 ]; then hold=0; else hold=2; fi
	ntb-uapi hold $hold >/tmp/hold.log 2>&1 &
	h=$!
	started /tmp/hold.log '^holding'
	phase kill-2
	if [ "$ME" = 2 ]; then
		wait $h
		no still-alive "guest 2 should have been killed"
		exit 0
	fi
	waited kill-link-down $h /tmp/hold.log
	phase kill-sntb-done
	rmmod smartio_ntb
	OTHER=$((1 - ME))
	tool_load $OTHER
	windows kill-mw 65536 $OTHER
	phase kill-tool-done
	rmmod ntb_tool
	perf_run kill-perf $OTHER
	pingpong kill-pingpong
	# -- guest 2 comes back: run-ntb.sh boots it again at this phase
	tool_load $OTHER
	phase join
	run join-link link_wait Y 2
	windows join-mw 65536 $OTHER 2
fi

# -- guest 1 is reset while it writes its windows; 0 and 2 see it go and come back
dmesg_check dmesg-b
phase reset-1
if [ "$ME" = 1 ]; then
	writing still-running 0 2
	exit 0
fi
OTHER=$((2 - ME))		# 0 and 2
run reset-link-down link_wait N 1
phase reset-back
run reset-link-up link_wait Y 1
windows reset-mw 65536 $OTHER 1
rmmod ntb_tool
unbind $OTHER 1
tool_load $OTHER 1
unload $OTHER 1
scribble
