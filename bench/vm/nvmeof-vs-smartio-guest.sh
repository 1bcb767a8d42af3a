# SPDX-License-Identifier: MIT
# Guests' half of bench/vm/nvmeof-vs-smartio.sh, run by tests/vm/run-ntb.sh
# as its suite (SIO_NTB_SUITE, SIO_NTB_NET=1): the three NTB guests, guest 0
# with QEMU's NVMe, guest 1 the initiator, guest 2 a bystander. ROUNDS
# times, in turn: guest 0's kernel exports the namespace (nvmet) and guest 1
# reads over NVMe/TCP, then NVMe/RDMA (soft-RoCE) where it runs, with fio
# (io_uring, O_DIRECT); then guest 0 lends the controller over the ntb
# fabric and guest 1 reads with nvme-client and with fio's smartio engine.
# 4 KiB random reads over 32 MiB, QD1 and QD32, RT seconds each.
#
# Every measured run is a pair of phases: all guests sample their CPU at
# its start and at its end ("SIO-BENCH-CPU NAME begin|end G ..."), guest 1
# prints the run's JSON between "SIO-BENCH-BEGIN NAME" and "SIO-BENCH-END".
# shellcheck disable=SC2046,SC2034 # fio's options (word-split), the libraries' n, RUN_LIMIT
RT=@RUNTIME@		# seconds per measured run
ROUNDS=@ROUNDS@		# the paths' turns
WINDOW=@WINDOW@		# 1: doorbells through guest 0's emulated window onto BAR0
. /vm/guest.sh	# res, ok, no, run, until_ok, kernel_nvme_blk
G=$(sed -n 's/.*sio\.guest=\([0-9]*\).*/\1/p' /proc/cmdline)
. /vm/nvmeof.sh	# nvmeof_start, nvmet_export, nvmeof_connect, ntb_lend
. /vm/ntb-sync.sh	# phase
n=0
RUN_LIMIT=$((RT * 3 + 120))
cd /tmp || exit 1

# cpu NAME WHEN: this guest's CPU so far: all CPUs' busy time and of it
# irq + softirq, in ticks (USER_HZ) from /proc/stat (and, last, all its
# ticks, idle too: the time the sample spans); then per group of
# processes, in ns of run time from each thread's schedstat (a tick is
# 10 ms, more than a few hundred I/Os of a kworker take; the threads alive
# now: a group's figure moves only with threads that live across a run):
# kernel workers (kworker: nvme-tcp's and nvmet's I/O work, rxe's tasks,
# ntb_hw_ivshmem's doorbell work), ksoftirqd, the lender with its relay
# (nvme-lend), nvme-manager, the node service (smartio ntb serve), and
# ntb_hw_ivshmem's forwarding threads (ivntb_fwd/N: the window onto BAR0,
# emulated; NTB hardware forwards those stores itself), and every thread
# together (ticks miss a thread that runs in bursts shorter than a tick
# between idle periods: a guest's /proc/stat then counts less time than
# passed); then the uptime, in hundredths of a second. The walk through
# /proc takes a TCG guest a few hundred ms of CPU: /proc/stat is read after
# it at the begin and before it at the end, so no run counts it.
cpu() {
	[ "$2" = end ] && stat_now
	groups_now
	[ "$2" = begin ] && stat_now
	echo "SIO-BENCH-CPU $1 $2 $G $b $t $all $up"
}
stat_now() {
	b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $7 + $8 }' /proc/stat)
	all=$(awk '/^cpu / { print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
	up=$(awk '{ printf "%d", $1 * 100 }' /proc/uptime)
}
groups_now() {
	t=$(for p in /proc/[0-9]*; do
		read -r c <"$p/comm" || continue
		for s in "$p"/task/*/schedstat; do read -r ns _ <"$s" && echo "$ns $c"; done
	done 2>/dev/null | awk '{
		g["threads"] += $1
		if ($2 ~ /^kworker/) g["kworker"] += $1
		else if ($2 ~ /^ksoftirqd/) g["ksoftirqd"] += $1
		else if ($2 == "nvme-lend") g["lend"] += $1
		else if ($2 == "nvme-manager") g["manager"] += $1
		else if ($2 == "smartio") g["serve"] += $1
		else if ($2 ~ /^ivntb_fwd/) g["emul"] += $1
	} END { printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f", g["kworker"], g["ksoftirqd"], g["lend"],
		g["manager"], g["serve"], g["emul"], g["threads"] }')
}
# idle NAME: a run with no I/O, RT seconds, every guest at it: each guest's
# floor in the state the next runs are in (connected, or lent), which the
# analysis takes from their CPU per I/O: an idle TCG guest's timer ticks,
# the manager's rounds and the node service's beats are there whatever
# the I/O, and at a few hundred I/Os a second they are most of a figure
idle() {
	phase "$1"
	cpu "$1" begin
	sleep "$RT"
	cpu "$1" end
	phase "$1-end"
}
# measure NAME CMD...: a measured run, every guest at it; guest 1 runs CMD,
# which writes its JSON to /tmp/NAME.json. Every guest's samples span guest
# 1's run: the others wait for it before their end sample (without the
# wait, theirs spanned their own sampling alone).
measure() {
	name=$1; shift
	phase "$name"
	cpu "$name" begin
	if [ "$G" = 1 ]; then
		"$@" >/tmp/"$name".log 2>&1 && [ -s /tmp/"$name".json ] && rc=0 || rc=$?
	fi
	phase "$name-ran"
	cpu "$name" end
	phase "$name-end"
	[ "$G" = 1 ] || return 0
	if [ "$rc" = 0 ]; then
		echo "SIO-BENCH-BEGIN $name"
		cat /tmp/"$name".json
		echo "SIO-BENCH-END $name"
		ok "bench-$name"
	else
		sed 's/^/    | /' /tmp/"$name".log
		no "bench-$name" "exit $rc"
	fi
}
# fio_runs PATH OPTIONS...: fio at QD1 and QD32 (batches of 16, as
# side-by-side.sh drives both drivers)
fio_runs() {
	p=$1; shift
	J="--name=r --bs=4k --rw=randread --size=32m --time_based --runtime=$RT --output-format=json --lat_percentiles=1"
	# shellcheck disable=SC2086 # fio's options, one word each
	measure "$p-qd1" fio $J "$@" --iodepth=1 --output=/tmp/"$p-qd1".json
	# shellcheck disable=SC2086
	measure "$p-qd32" fio $J "$@" --iodepth=32 --iodepth_batch_submit=16 \
		--iodepth_batch_complete_max=16 --output=/tmp/"$p-qd32".json
}
# oft TRANSPORT ROUND: guest 1 connects over TRANSPORT, reads, disconnects
oft() {
	[ "$G" = 1 ] && { nvmeof_connect "$1" || no "connect-$1" "over $1"; }
	phase "connected-$1-$2"
	idle "idle-nvme-$1-r$2"
	fio_runs "nvme-$1-r$2" --filename="${BLK:-/dev/null}" --ioengine=io_uring --direct=1
	[ "$G" = 1 ] && nvmeof_disconnect
	phase "disconnected-$1-$2"
}
# client_runs ROUND: nvme-client at QD1 and QD32 (its own loop)
client_runs() {
	for qd in 1 32; do
		measure "smartio-client-r$1-qd$qd" sh -c "nvme-client --fabric $FAB --op read --random \
			--lba 0 --count 65536 --bs 4k --qd $qd --time $RT --timeout 30000 --progress 0 --json \
			>/tmp/smartio-client-r$1-qd$qd.json"
	done
}

# guest 0's NTB accepts windows onto BAR0 (by pages, as ntb-fabric's barfwd)
[ "$WINDOW" = 1 ] && [ "$G" = 0 ] && NTB_ARGS="page_xlat=1 bar_fwd=1"
nvmeof_start
[ "$G" = 0 ] && echo "SIO-BENCH-INFO kernel $(uname -r), guest 0's NVMe $BLK ($MAIN), rdma=$RDMA"
phase ready
round=1
while [ $round -le "$ROUNDS" ]; do
	if [ "$G" = 0 ]; then
		nvmet_export "$BLK" && ok "nvmet-export-r$round" || no "nvmet-export-r$round" "configfs refused it"
	fi
	phase "exported-$round"
	oft tcp $round
	[ "$RDMA" = 1 ] && oft rdma $round
	if [ "$G" = 0 ]; then
		nvmet_unexport || no "nvmet-unexport-r$round" "configfs kept the subsystem"
		ntb_lend
		sed -n "s/^/    | /; /other kernels' doorbells/p" /tmp/lend.log
		# a run labelled with the window must have had it
		[ "$WINDOW" = 0 ] || grep -q "doorbells: stores through inbound window .*emulated forwarding" \
			/tmp/lend.log && ok "doorbells-r$round" ||
			no "doorbells-r$round" "the lender did not take the path asked for (WINDOW=$WINDOW)"
	fi
	phase "lent-$round"
	idle "idle-smartio-r$round"
	client_runs $round
	fio_runs "smartio-fio-r$round" --ioengine=external:/prog/fio-smartio.so
	# the engine spinning for every completion, beside its default (hybrid)
	fio_runs "smartio-fio-poll-r$round" --ioengine=external:/prog/fio-smartio.so \
		--sio_completions=poll
	[ "$G" = 0 ] && ntb_unlend
	phase "unlent-$round"
	round=$((round + 1))
done
dmesg_check dmesg
phase "done"
