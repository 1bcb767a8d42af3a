# SPDX-License-Identifier: MIT
# The guests' library: what every guest suite reports with. Sourced from
# /vm/guest.sh (run-vm.sh puts tests/vm/lib/*.sh there). Each result is one
# line "SIO-VM PASS|FAIL|SKIP name [: detail]"; the host scripts count them.
# shellcheck disable=SC2034 # t0: when the suite began, for its first line
t0=$(cut -d' ' -f1 /proc/uptime)
res() { echo "SIO-VM $1 $2${3:+ : $3}"; }
ok() { res PASS "$1"; }
no() { res FAIL "$1" "$2"; }
# signalled R: where R (an exit status) says a signal ended a process, which
# one, and what the kernel said of the fault (a segfault's ip, in which
# binary at which base: addr2line -e BINARY IP-BASE on the host)
signalled() {
	[ "$1" -gt 128 ] || return 0
	echo "    | ended by signal $(kill -l $(($1 - 128)))"
	dmesg | grep -a ' segfault at \| trap \|general protection' | tail -n 3 | sed 's/^/    | kernel: /'
}
# run NAME CMD...: run a check, indent its output, report by exit status.
# With RUN_LIMIT (s) set, a check that hangs is named with where it hangs
# (stuck), then killed, long before the host's limit (bounded_try).
run() {
	name=$1; shift
	bounded_try "$@" >/tmp/out 2>&1 && r=0 || r=$?
	sed 's/^/    | /' /tmp/out
	signalled $r
	if [ $r -eq 0 ]; then ok "$name"; else no "$name" "exit $r"; fi
	return $r
}
# stuck NAME PID: each process's state, kernel wait and system call, PID's
# stack and the fabric's status ($FAB); then an nvme-client is asked where
# its run stands (SIGUSR1: its queue's tails and heads, its last
# completion, each I/O in flight), on its own output: last, as one stuck
# before its run began has no handler yet and ends by the signal
stuck() {
	echo "    | $1: still running after ${RUN_LIMIT} s; the processes:"
	for d in /proc/[0-9]*; do
		[ -r "$d/cmdline" ] && [ -n "$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)" ] || continue
		printf '    |   %s %s [%s] wchan=%s syscall=%s\n' "${d#/proc/}" \
			"$(tr '\0' ' ' <"$d/cmdline" | cut -c1-80)" "$(cut -d' ' -f3 "$d/stat")" \
			"$(cat "$d/wchan" 2>/dev/null)" "$(cut -d' ' -f1 "$d/syscall" 2>/dev/null)"
	done
	sed 's/^/    |   stack: /' "/proc/$2/stack" 2>/dev/null
	for d in /proc/[0-9]*/task/[0-9]*; do
		# 2>/dev/null first: a task that ended since the glob is no error
		case $(tr '\0' '\n' 2>/dev/null <"$d/cmdline" | head -n 1) in
		nvme-*|*/nvme-*|smartio|*/smartio|fio|*/fio) ;;
		*) continue ;;
		esac
		printf '    |   task %s %s wchan=%s syscall=%s\n' "${d##*/}" "$(cat "$d/comm")" \
			"$(cat "$d/wchan" 2>/dev/null)" "$(cut -d' ' -f1,2 "$d/syscall" 2>/dev/null)"
	done
	case $(tr '\0' '\n' <"/proc/$2/cmdline" 2>/dev/null | head -n 1) in
	nvme-client|*/nvme-client) kill -USR1 "$2" && sleep 1 ;;
	esac
	smartio status $FAB 2>&1 | sed 's/^/    |   /' &
	sleep 5; kill $! 2>/dev/null
}
# bounded_try CMD...: CMD, killed after RUN_LIMIT s (if set) with its
# processes described on the console (fd 3, the suite's own output); 124
# then
exec 3>&1
bounded_try() {
	[ -n "${RUN_LIMIT:-}" ] || { "$@"; return; }
	"$@" &
	_bp=$! _bt=0
	# fifths of a second: a try that ends at once costs no whole second
	while kill -0 $_bp 2>/dev/null && [ $_bt -lt $((RUN_LIMIT * 5)) ]; do
		sleep 0.2; _bt=$((_bt + 1))
	done
	if kill -0 $_bp 2>/dev/null; then
		stuck "$*" $_bp >&3
		kill -9 $_bp
		wait $_bp
		return 124
	fi
	wait $_bp
}
# expect_fail NAME PATTERN CMD...: must fail with a message matching PATTERN.
expect_fail() {
	name=$1; pat=$2; shift 2
	"$@" >/tmp/out 2>&1 && r=0 || r=$?
	sed 's/^/    | /' /tmp/out
	if [ $r -ne 0 ] && grep -q "$pat" /tmp/out; then ok "$name"
	else no "$name" "exit $r, wanted a message matching '$pat'"; fi
}
# until_ok TRIES CMD...: retry CMD every second, TRIES times; its last
# output is in /tmp/until, and said when it never succeeded. With RUN_LIMIT
# set, a try that hangs is named where it hangs (stuck, on the console),
# killed, and counts as failed: a hung try must not hang the suite.
until_ok() {
	t=$1; shift
	while ! bounded_try "$@" >/tmp/until 2>&1; do
		t=$((t - 1)); [ $t -gt 0 ] || { cat /tmp/until; return 1; }
		sleep 1
	done
}
# measure NAME: the latency line of the last run, for the host's summary
measure() { grep 'latency us' /tmp/out | sed "s/^ */SIO-VM MEASURE $1: /"; }
# The kernel's nvme driver takes PCI function $1 back; prints its namespace's
# block device once it is there.
kernel_nvme_blk() {
	for m in $(cat /lib/modules/nvme.list); do insmod /lib/modules/$m 2>/dev/null; done
	until_ok 30 sh -c "ls -d /sys/bus/pci/devices/$1/nvme/nvme*/nvme*n1" >/dev/null
	echo "/dev/$(basename "$(ls -d /sys/bus/pci/devices/$1/nvme/nvme*/nvme*n1 | head -n1)")"
}

# The blocks two clients wrote (256 of 0xa1 at block 0, 256 of 0xb2 at
# block 1024), read back by the kernel from block device $1; $2 = 1: the
# first client's alone.
readback_clients() {
	head -c $((256 * 512)) /dev/zero | tr '\0' '\241' >/tmp/a1.bin
	head -c $((256 * 512)) /dev/zero | tr '\0' '\262' >/tmp/b2.bin
	run readback-client1 vfio-nvme kcheck $1 /tmp/a1.bin 0
	[ "${2:-2}" = 1 ] || run readback-client2 vfio-nvme kcheck $1 /tmp/b2.bin $((1024 * 512))
}
