# SPDX-License-Identifier: MIT
# Guest half of bench/vm/side-by-side.sh, run as the vm suite's /suite.sh
# (tests/vm/run-vm.sh with SIO_VM_SUITE). One QEMU NVMe controller, measured
# first through the kernel's nvme driver (fio, io_uring, O_DIRECT; interrupt
# and polled queues) and then through smartio's driver on vfio (fio with the
# smartio engine, nvme-bench-sweep). Results go to the console between
# "SIO-BENCH-BEGIN name cpu=JIFFIES hz=HZ wall=CS side=JIFFIES idle=JIFFIES
# cpus=N" and "SIO-BENCH-END name"; checks
# print "SIO-VM PASS|FAIL|SKIP name" as in guest-suite.sh. Then the other
# benchmarks on vfio-lent controllers (sq-placement, overhead, emu-bench).
RT=@RUNTIME@		# seconds per measured run, set by side-by-side.sh
BDF=0000:00:04.0	# the controller under test (run-vm.sh's "main", 64 MiB)
FAB=sbs
cd /tmp || exit 1

res() { echo "SIO-VM $1 $2${3:+ : $3}"; }
# non-idle time of every guest CPU (user nice system irq softirq steal), then
# their idle and iowait, in USER_HZ ticks, from one read: with the tick
# stopped while idle (NOHZ), the kernel times idle and iowait from idle entry
# to exit, where the busy fields are one tick's sample each
cpu() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6}' /proc/stat; }
NCPU=$(grep -c ^processor /proc/cpuinfo)
# CPU ticks of the lender and the manager (0 before they start)
side() {
	t=0
	for p in ${LEND:-} ${MGR:-}; do
		t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0)))
	done
	echo $t
}
# measure NAME FILE CMD...: run CMD, then print FILE with its CPU ticks, its
# wall time (centiseconds) and the lender's and manager's share of the ticks;
# the marks around it tell the host when to read its vCPUs' time
# (bench/vm/vcpu-time.py)
measure() {
	n=$1 out=$2; shift 2
	echo "SIO-BENCH-MARK $n begin"
	x=$(cpu) s0=$(side) w0=$(cut -d' ' -f1 /proc/uptime)
	c0=${x% *} i0=${x#* }
	"$@" >/tmp/$n.log 2>&1; rc=$?
	w1=$(cut -d' ' -f1 /proc/uptime) s1=$(side) x=$(cpu)
	c1=${x% *} i1=${x#* }
	echo "SIO-BENCH-MARK $n end"
	if [ $rc -ne 0 ] || [ ! -s "$out" ]; then
		sed 's/^/    | /' /tmp/$n.log
		res FAIL "bench-$n" "exit $rc"
		return 1
	fi
	echo "SIO-BENCH-BEGIN $n cpu=$((c1 - c0)) hz=100 wall=$(echo "$w0 $w1" |
		awk '{printf "%d", ($2 - $1) * 100}') side=$((s1 - s0)) idle=$((i1 - i0)) cpus=$NCPU"
	cat "$out"
	echo "SIO-BENCH-END $n"
	res PASS "bench-$n"
}
# check NAME CMD...: a check whose exit status is the verdict
check() {
	n=$1; shift
	"$@" >/tmp/$n.log 2>&1; rc=$?
	sed 's/^/    | /' /tmp/$n.log
	[ $rc -eq 0 ] && res PASS "$n" || res FAIL "$n" "exit $rc"
	return $rc
}

# Modules: the kernel's nvme driver with poll queues (nvme.poll_queues), vfio.
for set in nvme vfio; do
	for m in $(cat /lib/modules/$set.list); do
		arg=
		[ "$m" = nvme.ko ] && arg=poll_queues=2
		insmod /lib/modules/$m $arg 2>/tmp/ins || grep -q 'File exists' /tmp/ins ||
			echo "insmod $m: $(cat /tmp/ins)"
	done
done
# The kernel binds every controller; find ours.
i=0
while [ ! -d /sys/bus/pci/devices/$BDF/nvme ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ctl=$(ls /sys/bus/pci/devices/$BDF/nvme 2>/dev/null | head -n1)
i=0
while [ ! -b /dev/${ctl}n1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
NS=${ctl}n1
[ -b /dev/$NS ] || { res FAIL kernel-nvme "no block device for $BDF"; exit 0; }
POLL=$(cat /sys/block/$NS/queue/io_poll 2>/dev/null)
echo "SIO-BENCH-INFO kernel $(uname -r) device /dev/$NS ($BDF) io_poll=$POLL cpus=$NCPU"
cat /sys/module/nvme/parameters/poll_queues 2>/dev/null | sed 's/^/SIO-BENCH-INFO poll_queues=/'

K="--filename=/dev/$NS --ioengine=io_uring --direct=1 --bs=4k --rw=randread --size=64m"
J="--output-format=json --lat_percentiles=1 --time_based --runtime=$RT"
# QD32 the way fio drives an NVMe queue hard: batches of 16 submitted and
# reaped at once, the same options for both drivers (each then writes one
# doorbell a batch: blk-mq's commit_rqs, smartio's commit hook).
B="--iodepth=32 --iodepth_batch_submit=16 --iodepth_batch_complete_max=16"
# Data first: the kernel writes 4 MiB with CRC32C headers and verifies it;
# smartio reads the same blocks back on vfio below.
VER="--name=ver --bs=4k --rw=write --size=4m --offset=32m --verify=crc32c --randseed=7"
check kernel-fio-verify fio $VER --filename=/dev/$NS --ioengine=io_uring --direct=1 --iodepth=8
measure k-irq-qd1 /tmp/k1.json fio --name=k $K $J --iodepth=1 --output=/tmp/k1.json
measure k-irq-qd32 /tmp/k32.json fio --name=k $K $J $B --output=/tmp/k32.json
if [ "$POLL" = 1 ]; then
	measure k-poll-qd1 /tmp/kp1.json fio --name=k $K $J --hipri=1 --iodepth=1 --output=/tmp/kp1.json
	measure k-poll-qd32 /tmp/kp32.json fio --name=k $K $J $B --hipri=1 --output=/tmp/kp32.json
else
	res SKIP bench-k-poll "the kernel offers no polled queues here (io_poll=$POLL)"
fi

# The same controller to smartio: unbind the kernel's driver, bind vfio-pci,
# lend it, a manager serves it.
echo $BDF >/sys/bus/pci/drivers/nvme/unbind
check vfio-bind smartio vfio bind $BDF || exit 0
smartio create $FAB --nodes 1 >/dev/null
smartio vfio lend $BDF --fabric $FAB >/tmp/lend.log 2>&1 &
LEND=$!
i=0
while ! grep -q '^lending' /tmp/lend.log && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
DEV=$(sed -n 's/.* as device \([0-9]*\) .*/\1/p' /tmp/lend.log)
nvme-manager --fabric $FAB --device "$DEV" --ready-file /tmp/mgr.ready >/tmp/mgr.log 2>&1 &
MGR=$!
i=0
while [ ! -s /tmp/mgr.ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -s /tmp/mgr.ready ] || { cat /tmp/lend.log /tmp/mgr.log; res FAIL smartio-manager; exit 0; }

E="--ioengine=external:/prog/fio-smartio.so --sio_fabric=$FAB --sio_device=$DEV"
check smartio-fio-reads-kernel-data fio $VER $E --iodepth=8 --verify_only=1
check smartio-fio-verify fio --name=sv $E --bs=16k --rw=randwrite --size=4m --offset=40m \
	--iodepth=8 --verify=crc32c
S="$E --bs=4k --rw=randread --size=64m"
measure s-fio-qd1 /tmp/s1.json fio --name=s $S $J --iodepth=1 --output=/tmp/s1.json
measure s-fio-qd32 /tmp/s32.json fio --name=s $S $J $B --output=/tmp/s32.json
# QD32 again in other completion modes than the default (hybrid: timed
# sleeps): asleep on the CQ's interrupt after a short spin, and polling
for m in adaptive poll; do
	measure s-fio-$m-qd32 /tmp/s32$m.json fio --name=s $S $J $B --sio_completions=$m \
		--output=/tmp/s32$m.json
done
# fio's own floor: the null engine (no device, no driver) at the same depth
# and batches, in the same guest: what fio itself costs an I/O
measure null-fio-qd32 /tmp/n32.json fio --name=n --ioengine=null --bs=4k --rw=randread \
	--size=64m $J $B --output=/tmp/n32.json
measure s-sweep-qd1 /tmp/w1/sweep.json \
	nvme-bench-sweep --fabric $FAB --device "$DEV" --qd 1 -t $RT -o /tmp/w1
measure s-sweep-qd32 /tmp/w32/sweep.json \
	nvme-bench-sweep --fabric $FAB --device "$DEV" --qd 32 -t $RT -o /tmp/w32
for m in irq adaptive hybrid; do
	measure s-sweep-$m-qd32 /tmp/w32$m/sweep.json nvme-bench-sweep --fabric $FAB \
		--device "$DEV" --qd 32 --completions $m -t $RT -o /tmp/w32$m
done

# The benchmarks pointed at vfio-lent controllers as a user would: on this
# one (no CMB) and on the 16 MiB CMB controller at 00:05.0.
expect() {	# expect NAME PATTERN CMD...: CMD's output must match PATTERN
	n=$1 pat=$2; shift 2
	"$@" >/tmp/$n.log 2>&1; rc=$?
	sed 's/^/    | /' /tmp/$n.log
	if grep -q "$pat" /tmp/$n.log; then res PASS "$n"; else res FAIL "$n" "exit $rc, no '$pat'"; fi
}
expect sq-placement-vfio "skipped: cmb .*no CMB" \
	nvme-bench-sq-placement --fabric $FAB --device "$DEV" -n 4096 -o /tmp/sq1
CMB=0000:00:05.0
echo $CMB >/sys/bus/pci/drivers/nvme/unbind
smartio vfio bind $CMB >/dev/null
smartio vfio lend $CMB --fabric $FAB >/tmp/lend2.log 2>&1 &
i=0
while ! grep -q '^lending' /tmp/lend2.log && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
DEV2=$(sed -n 's/.* as device \([0-9]*\) .*/\1/p' /tmp/lend2.log)
expect sq-placement-no-manager "no manager serves device $DEV2" \
	nvme-bench-sq-placement --fabric $FAB --device "$DEV2" -n 4096 -o /tmp/sq2
expect sq-placement-vfio-cmb "^cmb " \
	nvme-bench-sq-placement --fabric $FAB --device "$DEV2" --start-manager -n 4096 -o /tmp/sq2
expect overhead-vfio "^submit + complete" nvme-bench-overhead --fabric $FAB --device "$DEV" -n 2000 -o /tmp/ov
expect emu-bench-refuses-served "needs it alone" \
	emu-bench --fabric $FAB --device "$DEV" --reset -n 100 -t 1 -j /tmp/e.json -l /tmp/e.dat
kill $MGR
wait $MGR
expect emu-bench-vfio "QD32 4KiB reads/s" \
	emu-bench --fabric $FAB --device "$DEV" --reset -n 2000 -t 1 -j /tmp/e.json -l /tmp/e.dat
