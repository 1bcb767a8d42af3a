# SPDX-License-Identifier: MIT
# The storm across guests, the guests' side (run-ntb.sh runs it with
# SIO_NTB_SUITE; the faults are lib/host.sh's act_storm): three guests,
# ports 0 1 2 of an NTB of ntb_hw_ivshmem, one fabric of backend ntb. Guest
# 2 creates the fabric (its home), guest 1's node service is the standby
# home; guest 0 lends QEMU's NVMe (vfio with VT-d) and runs nvme-manager,
# and is never the home (SMARTIO_NTB_STANDBY=0): the home and the lender
# are apart, and a kill of guest 2 or a reset of guest 1 kills the home
# when it is there (its standby, the other one, takes over; the host kills
# a home only while a standby stands by). Guest 1 runs a standby manager.
# Guests 1 and 2 (and 0, with
# sio.storm_clients=012) run verified nvme-client I/O in a range of their
# own, one run after another: a run
# writes its range with the content of a seed of its own (--flush), reads it
# back and compares; the run after a run that ended well first reads the
# range back against that seed, which must have outlived whatever faults
# came between. Guest 1's client is QD 4, guest 2's QD1, both across the
# NTB; guest 0's a local QD1 one.
#
# While the host draws faults (act_storm), each guest takes them from its
# console ("STORM kill-client", "STORM kill-manager": the serving manager
# dies and its guest starts a standby; the other guest's standby takes the
# device over) and says what it did in "SIO-STORM ..." lines, which the
# host counts: RUN (one client run: its guest, number, operation, seed,
# exit status, verified I/Os, mismatched blocks, the first error), SERVING
# (a manager of this guest serves: a take-over), HOME (this guest's node
# service took the fabric's home over), STANDBY-HOME (it keeps the home's
# copy), REJOINED (a guest reset or
# booted again is back in the fabric), HANG (a client whose output stood
# still for STALL_S s: its state, kernel stack and the fabric's, then it is
# killed). A guest reset in place (guest 1) or booted again (guest 2) finds
# itself restarted, rejoins and takes part again.
#
# After the storm ("STORM end"): each guest's last client run ends, then a
# final run in every guest writes its range with a byte of its own (0xc0 +
# guest), verified; the managers stop, guest 0's own nvme driver reads the
# three ranges back, and dmesg is clean in every guest.
#
# host: storm
# want: g0:load g1:load g2:load g2:fabric-create g0:fabric-join g1:fabric-join
# want: g0:lend g0:manager g1:standby g0:storm g1:storm host:storm-faults
# want: g0:final-run g1:final-run g2.last:final-run g2.last:storm
# want: g0:readback-g0 g0:readback-g1 g0:readback-g2 g0:dmesg g1:dmesg g2.last:dmesg
. /vm/guest.sh	# ok, no, run, until_ok, stuck, kernel_nvme_blk
FAB=ntbstorm
MOD=/lib/modules
MAIN=0000:00:04.0			# QEMU's NVMe (guest 0 only)
LEND=vfio
G=$(sed -n 's/.*sio\.guest=\([0-9]*\).*/\1/p' /proc/cmdline)
export SMARTIO_FABRIC_BACKEND=ntb SMARTIO_FABRIC=$FAB SMARTIO_QUIET=1
# A guest stopped by TCG's load is no death: the lease outlasts it. A
# client waits at most 30 s for a manager's successor or a reset; its I/O
# times out after 10 s.
export SMARTIO_SHMWIN_LEASE_MS=12000 SMARTIO_NVME_RESTART_MS=30000 SMARTIO_NVME_RESET_MS=30000
# A process that holds the registry lock while TCG on a loaded host gives
# its guest a tenth of a CPU keeps it for seconds: 5 s (the default) was
# seen run out under a holder alive and well.
export SMARTIO_LOCK_TIMEOUT_MS=20000
# the lender's kernel is never the home (its node service reads this)
[ "$G" = 0 ] && export SMARTIO_NTB_STANDBY=0
# A client run whose output stands still this long hangs: longer than any of
# its waits (30 s for an answer or a successor, 20 s for the registry lock,
# 10 s for a command, 10 s for a link), with a margin for TCG on a loaded
# host. It prints a progress line every 5 s while it runs I/O.
STALL_S=90
RUN_LIMIT=240
n=0
. /vm/ntb-sync.sh	# phase, hello, dmesg_check
. /vm/ntb-fabric.sh	# load, serve (spid), lend_start
# the host's lines are not echoed: an echo in the middle of a guest's line
# ("SIO-STORM SERVING ... at 74 sGO 3") could hide the start of the next
stty -F /dev/console -echo 2>/dev/null

# The guests that run clients in the storm: sio.storm_clients=DIGITS on the
# kernel command line (run-ntb.sh's SIO_NTB_APPEND), 12 by default; 012 adds
# guest 0's local QD1 client (docs/ntb.md says what it does to the others)
CLIENTS=$(sed -n 's/.*sio\.storm_clients=\([0-9]*\).*/\1/p' /proc/cmdline)
case ${CLIENTS:-12} in *$G*) CLIENT=1 ;; *) CLIENT="" ;; esac
# range: this guest's blocks and depth (first block, blocks, QD)
case $G in
0) RANGE="16384 1024 1" ;;
1) RANGE="0 2048 4" ;;
*) RANGE="8192 2048 1" ;;
esac


# --- the managers (guests 0 and 1) ---
# manager ARGS...: nvme-manager in the background, pid in /tmp/mgr.pid
manager() {
	rm -f /tmp/mgr.ready
	nvme-manager --fabric $FAB --ready-file /tmp/mgr.ready "$@" >>/tmp/mgr.log 2>&1 &
	echo $! >/tmp/mgr.pid
}
standby() { manager --standby; }
# mgr_watch: say "SERVING" once for each manager of this guest that serves
# (the first, or a standby that took over)
mgr_watch() {
	said=
	while [ ! -e /tmp/storm.over ]; do
		p=$(cat /tmp/mgr.pid 2>/dev/null)
		if [ -s /tmp/mgr.ready ] && [ "$p" != "$said" ]; then
			echo "SIO-STORM SERVING g$G (pid $p) at $(uptime_s) s"
			said=$p
		fi
		sleep 0.5
	done
}
# kill_manager: the host's kill goes to the guest it saw serve last; a
# manager that serves is killed and a standby takes its place here
kill_manager() {
	p=$(cat /tmp/mgr.pid 2>/dev/null)
	if [ -n "$p" ] && [ -s /tmp/mgr.ready ] && kill -9 "$p" 2>/dev/null; then
		echo "SIO-STORM KILLED-MANAGER g$G (pid $p)"
		standby
	else
		echo "SIO-STORM NO-MANAGER g$G: none serves here"
	fi
}

# home_watch: say "HOME" when this guest's node service took the fabric
# over and "STANDBY-HOME" when it keeps the home's copy (the host starts
# with guest 2, which creates it, the home), from the service's start (a
# guest back claims the role before it takes part in the storm: the host
# must know the home has a standby at once) to the storm's end
home_watch() {
	[ "$G" != 0 ] || return 0
	nh=0 ns=0
	while [ ! -e /tmp/storm.over ]; do
		c=$(grep -c "is the fabric's home from now on" /tmp/serve.log)
		[ "$c" -le "$nh" ] || { echo "SIO-STORM HOME g$G at $(uptime_s) s"; nh=$c; }
		c=$(grep -c "the standby home of fabric" /tmp/serve.log)
		[ "$c" -le "$ns" ] || { echo "SIO-STORM STANDBY-HOME g$G at $(uptime_s) s"; ns=$c; }
		sleep 0.5
	done
}

# --- the clients ---
# client_run K OP SEED [--flush]: one nvme-client run over this guest's
# range, said in a RUN line; its exit status
client_run() {
	k=$1 op=$2 seed=$3 flush=${4:-} t1=$(uptime_s)
	# shellcheck disable=SC2086 # RANGE: three words
	set -- $RANGE
	nvme-client --fabric $FAB --op "$op" --seed "$seed" --lba "$1" --count "$2" --bs 4k \
		--qd "$3" --timeout 10000 --progress 5s $flush >/tmp/c.log 2>&1 &
	echo $! >/tmp/client.pid
	wait $! && rc=0 || rc=$?
	rm -f /tmp/client.pid
	ios=$(sed -n 's/^  read *\([0-9]*\) I\/Os.*/\1/p' /tmp/c.log)
	mm=$(sed -n 's/^  mismatches \([0-9]*\) .*/\1/p' /tmp/c.log)
	why=""
	if [ "$rc" = 137 ]; then
		why="killed by the storm"
		[ ! -e /tmp/hung ] || why="hung: killed by the watchdog"
		rm -f /tmp/hung
	elif [ "$rc" != 0 ]; then
		# the first error, not a progress line
		why=$(grep -a -v '^nvme-client: [0-9]* s' /tmp/c.log | grep -a -m 1 '^nvme-client: ' |
			cut -c 14-160)
		[ -n "$why" ] || why="exit $rc, nothing said"
		holder "$why"
	fi
	[ $rc = 0 ] && v=${ios:-0} || v=0	# a failed run verified nothing for sure
	echo "SIO-STORM RUN g$G #$k $op seed $seed rc $rc verified $v mismatches ${mm:-0} took $(($(uptime_s) - t1)) s${why:+ : $why}"
	[ $rc = 0 ] || [ $rc = 137 ] || sed 's/^/    | /' /tmp/c.log
	return $rc
}
# holder WHY: a registry lock held too long by a process of this kernel:
# where it is (its threads' kernel stacks and system calls)
holder() {
	p=$(echo "$1" | sed -n "s/.*lock has been held .* by pid \([0-9]*\) o[fn] node $G,.*/\1/p")
	[ -n "$p" ] && [ -d "/proc/$p" ] || return 0
	echo "    | the lock's holder, pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline")"
	for t in /proc/"$p"/task/*; do
		echo "    |   thread ${t##*/} [$(cut -d' ' -f3 "$t/stat")] wchan=$(cat "$t/wchan") syscall=$(cut -d' ' -f1 "$t/syscall")"
		sed 's/^/    |     /' "$t/stack" 2>/dev/null
	done
}
# client_loop: runs until the storm ends (/tmp/storm.end); the seed of the
# last run that ended well is read back by the next run first
client_loop() {
	k=0 durable=
	while [ ! -e /tmp/storm.end ]; do
		k=$((k + 1))
		if [ -n "$durable" ]; then
			client_run $k verify "$durable" || durable=
			[ ! -e /tmp/storm.end ] || break
		fi
		seed=$(( (G + 1) * 1000000 + $(uptime_s) * 100 + k % 100 ))
		client_run $k write-verify $seed --flush && durable=$seed || durable=
		# a polling client shares guest 0's one CPU with the manager, the
		# relay and the node service: guest 0's pauses longer
		if [ "$G" = 0 ]; then sleep 3; else sleep 1; fi
	done
}
# watchdog: a client run whose output stands still STALL_S s hangs: said
# with its state (SIGUSR1: its queue's heads, tails and last completion),
# its processes' kernel waits and stacks and the fabric's state, then killed
watchdog() {
	last='' still=0
	while [ ! -e /tmp/storm.over ]; do
		sleep 5
		p=$(cat /tmp/client.pid 2>/dev/null) || { still=0; continue; }
		now="$p $(wc -c </tmp/c.log)"
		if [ "$now" = "$last" ]; then still=$((still + 5)); else still=0 last=$now; fi
		[ $still -ge $STALL_S ] || continue
		echo "SIO-STORM HANG g$G: nvme-client (pid $p) said nothing for $still s"
		touch /tmp/hung
		RUN_LIMIT=$still stuck storm-client "$p"	# and SIGUSR1: where it stands
		sed 's/^/    | client: /' /tmp/c.log
		smartio nvme stats $FAB 2>&1 | sed 's/^/    |   /' &
		sleep 5; kill $! 2>/dev/null
		kill -9 "$p"
		still=0
	done
}

# storm: the clients and the watchdog run while the host's faults come in
# on the console, until "STORM end"; then the last client run ends
storm() {
	rm -f /tmp/storm.end /tmp/storm.over
	cpid=""
	[ -z "$CLIENT" ] || { client_loop & cpid=$!; }
	watchdog &
	wpid=$!
	r=0
	while :; do
		line=
		# one long read (ntb-sync.sh says why); the host ends every storm
		read -r -t 3600 line </dev/console || { r=1; break; }
		case $line in
		"STORM kill-client")
			p=$(cat /tmp/client.pid 2>/dev/null) && kill -9 "$p" 2>/dev/null &&
				echo "SIO-STORM KILLED-CLIENT g$G (pid $p)" ;;
		"STORM kill-manager") kill_manager ;;
		"STORM end") break ;;
		esac
	done
	touch /tmp/storm.end
	# the last run ends within its bounds, or the watchdog ends it
	[ -z "$cpid" ] || wait $cpid
	touch /tmp/storm.over
	wait $wpid
	if [ $r = 0 ]; then ok storm; else no storm "no end of the storm from the host"; fi
}

# the tail, in every guest: a final run with no fault, the managers stopped,
# guest 0's kernel reads the ranges back
finish() {
	phase storm-end
	# shellcheck disable=SC2086
	set -- $RANGE
	run final-run nvme-client --fabric $FAB --op write-verify --pattern 0xc$G --flush \
		--lba "$1" --count "$2" --bs 4k --qd "$3" --timeout 10000
	phase final
	if [ -s /tmp/mgr.pid ]; then
		p=$(cat /tmp/mgr.pid)
		kill "$p" 2>/dev/null
		until_ok 30 sh -c "! kill -0 $p 2>/dev/null" || no manager-stop "pid $p still runs"
		sed 's/^/    | mgr: /' /tmp/mgr.log
	fi
	phase managers-stopped
	if [ "$G" = 0 ]; then
		kill "$lpid"; wait "$lpid"
		run unbind smartio vfio unbind $MAIN
		blk=$(kernel_nvme_blk $MAIN)
		for g in 0 1 2; do
			case $g in 0) at=16384 nb=1024 ;; 1) at=0 nb=2048 ;; *) at=8192 nb=2048 ;; esac
			head -c $((nb * 512)) /dev/zero | tr '\0' "\\30$g" >/tmp/c$g.bin
			run readback-g$g vfio-nvme kcheck "$blk" /tmp/c$g.bin $((at * 512))
		done
	fi
	dmesg_check dmesg
	phase done
	kill "$spid" 2>/dev/null
}

load
if grep -q 'sio.join' /proc/cmdline || dmesg | grep -q 'restarted: its slot still holds'; then
	# -- a guest reset (1) or booted again (2) mid-storm: back on its port
	hello	# told the phase after the storm
	serve 1
	home_watch &
	until_ok 60 smartio status $FAB && ok rejoin || no rejoin "$(cat /tmp/until)"
	if [ "$G" = 1 ]; then standby; mgr_watch & fi
	# the device: its clients' runs say whether it serves them
	echo "SIO-STORM REJOINED g$G at $(uptime_s) s"
	storm
	finish
	exit 0
fi

serve 2
home_watch &
phase serve
case $G in
2)	run fabric-create smartio create $FAB --nodes 3 ;;
*)	until_ok 60 smartio status $FAB && ok fabric-join || no fabric-join "$(cat /tmp/until)" ;;
esac
phase fabric
if [ "$G" = 0 ]; then
	lend_start
	manager --device "$dev"
	until_ok 120 test -s /tmp/mgr.ready && ok manager || { cat /tmp/mgr.log; no manager; }
	mgr_watch &
fi
phase served
if [ "$G" = 1 ]; then
	standby
	until_ok 30 grep -q 'standing by' /tmp/mgr.log && ok standby ||
		{ cat /tmp/mgr.log; no standby "no standby"; }
	mgr_watch &
fi
phase storm
storm
finish
