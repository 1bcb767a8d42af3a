#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The NTB vm suite: QEMU guests (TCG), each its own kernel, share one
# ivshmem-doorbell region served by smartio-ivshmem-server; in each, the
# upstream NTB core (ntb.ko) and ntb_hw_ivshmem make ports of a 4-port NTB,
# and ntb-suite.sh runs the upstream clients (ntb_tool, ntb_perf,
# ntb_pingpong, ntb_transport) and smartio_ntb over it. Guest 0 has an
# emulated VT-d, the others none. Three guests start; guest 2's QEMU is
# SIGKILLed mid-run (the others must see its link go down and carry on), then
# boots again (a new QEMU and kernel, back on port 2), and guest 1 is reset in
# place mid-run (the others see it go and come back on the same port). Exit 0
# when every check passed, 1 on a failure, 77 (SKIP) without QEMU or the NTB
# modules.
#
# The guests' phases, the host's actions at them (the suite's "# host:"
# lines: kill-2, join, flap-1, reset-1) and the failure report are
# lib/host.sh's; the suite's "# want:" lines say what must pass. Another
# suite runs with the same machinery (the ntb fabric's,
# ntb-fabric-suite.sh), and a suite may have two guests (SIO_NTB_GUESTS=2)
# and two NTBs per guest (SIO_NTB_REGIONS=2): the knobs (SIO_NTB_*,
# SIO_VM_TIMEOUT) are listed, with their defaults, in lib/host.sh's header.
#
# usage: run-ntb.sh BUILD_ROOT SOURCE_DIR [WORK_DIR]
set -eu
# shellcheck source=lib/host.sh
. "$2/lib/host.sh"
vm_setup "$1" "$2" "${3:-}" ntb
case ${SIO_NTB_REGIONS:-1} in 1|2) ;; *) echo "ntb: FAIL: SIO_NTB_REGIONS is 1 or 2, not '$SIO_NTB_REGIONS'"; exit 1 ;; esac
case ${SIO_NTB_GUESTS:-3} in 2|3) ;; *) echo "ntb: FAIL: SIO_NTB_GUESTS is 2 or 3, not '$SIO_NTB_GUESTS'"; exit 1 ;; esac
vm_kernel
mods=${SIO_NTB_MODULES:-$build/kernel}
if [ ! -f "$mods/ntb_hw_ivshmem.ko" ] || [ ! -f "$mods/smartio_ntb.ko" ]; then
	[ -f "$kroot/lib/modules/$kver/build/Module.symvers" ] ||
		skip "no headers for $kver to build the NTB modules with (tools/install-deps.sh installs linux-headers-$kver)"
	[ -f "${SMARTIO_CACHE:-/var/cache/smartio}/linux-ntb/$kver/drivers/ntb/core.c" ] ||
		skip "no NTB framework sources for $kver (tools/install-deps.sh runs kernel/upstream.sh)"
	skip "the NTB modules were not built (meson configure -Dkernel_modules=enabled)"
fi
# shellcheck source=lib/ntb-sync.sh
. "$src/lib/ntb-sync.sh"	# SIO_KREPORT, what a kernel report says

ko=""
for m in ntb ntb_hw_ivshmem ntb_tool ntb_perf ntb_pingpong ntb_transport smartio_ntb; do
	[ -f "$mods/$m.ko" ] && ko="$ko $mods/$m.ko"
done
suite=${SIO_NTB_SUITE:-$src/ntb-suite.sh}
ntb_profiles_check || exit 1
# Variant selftest (ntb-profiles-suite.sh): the kernel's NTB selftest as
# kernel/upstream.sh caches it, with the host's tools it takes for granted
# where busybox's differ (bash; cmp, whose -n takes the hex sizes it
# passes; kmod's modprobe and depmod, which it finds on a usual host),
# and lib/ssh, which carries its remote side to another guest
# over the guests' network.
selftest=""
case ",${SIO_NTB_VARIANT:-}," in
*,selftest,*)
	selftest=${SMARTIO_CACHE:-/var/cache/smartio}/linux-ntb/$kver/tools/testing/selftests/ntb/ntb_test.sh
	[ -f "$selftest" ] || { echo "ntb: FAIL: no $selftest (kernel/upstream.sh $kver fetches it)"; exit 1; }
	for t in bash cmp modprobe depmod; do
		command -v $t >/dev/null || { echo "ntb: FAIL: no $t, which ntb_test.sh needs (apt-get install bash diffutils kmod)"; exit 1; }
		selftest="$selftest $(command -v $t)"
	done
	selftest="$selftest $src/lib/ssh"
	# shellcheck disable=SC2034 # host.sh's ntb_net reads it
	SIO_NTB_NET=1
	SIO_VM_MODSETS="${SIO_VM_MODSETS:+$SIO_VM_MODSETS }net:virtio_pci,virtio_net" ;;
esac
vm_initramfs "$suite" \
	"${SIO_NTB_EXTRA:-$build/tests/vm/ntb-uapi $build/tests/vm/ntb-scribble $(ls "$build/tests/vm/ntb-uapi32" 2>/dev/null)} $selftest" \
	"$ko"
tmo=${SIO_VM_TIMEOUT:-540}	# under meson's 600 s; a quiet 2-core host needs about 120
truncate -s 64M "$work/nvme.img"	# for a suite that gives guest 0 an NVMe
for r in $(ntb_regions); do
	truncate -s "${SIO_NTB_SHM_MB:-32}M" "$(ntb_shm "$r")"
	ivshmem_server ntb "$(ntb_shm "$r")" --vectors "${SIO_NTB_VECTORS:-2}"
done

start=$(date +%s)
g0iommu="-device intel-iommu,intremap=on,caching-mode=on"
[ "${SIO_NTB_G0_IOMMU:-1}" != 0 ] || g0iommu=""
# guest 0's devices: QEMU's edu by default, a target of emulated forwarding
g0args=$(printf '%s\n' "${SIO_NTB_G0_ARGS--device edu,addr=9}" | sed "s|\\\$work|$work|g")
# shellcheck disable=SC2086 # QEMU arguments, one word each
ntb_guest 0 g0 "${SIO_NTB_G0_APPEND:-intel_iommu=on}" -no-reboot $g0iommu $g0args
ntb_guest 1 g1 "intel_iommu=off"		# reset in place later: it may reboot
[ "${SIO_NTB_GUESTS:-3}" = 2 ] || ntb_guest 2 g2 "intel_iommu=off" -no-reboot
echo "ntb: ${SIO_NTB_GUESTS:-3} guests (QEMU pids$pids), ${SIO_NTB_REGIONS:-1} ivshmem-doorbell region(s) of ${SIO_NTB_SHM_MB:-32} MiB$([ "${SIO_NTB_SHARED:-0}" != 1 ] || echo ", one file behind all"), ${SIO_NTB_VECTORS:-2} vectors; guest 0: ${SIO_NTB_G0_APPEND:-intel_iommu=on}"

ntb_phases "$start" "$tmo"
for p in $pids; do wait "$p" 2>/dev/null || true; done
pids=""
end=$(date +%s)
ivshmem_server_end
fail=0
for l in $(ntb_logs); do
	echo "---- guest ${l#g}"
	vm_console "$work/$l.log"
done
echo "ntb: the guests ran for $((end - start)) s ($k phases)"
for l in ${SIO_NTB_FINISH:-g0 g1 g2b}; do
	tr -d '\r' <"$work/$l.log" 2>/dev/null | grep -q '^SIO-VM DONE' ||
		{ echo "ntb: FAIL: guest ${l#g} did not finish"; fail=1; }
done
ntb_hosted || fail=1
ntb_wanted || fail=1
ntb_storm_report || fail=1
if [ -n "$selftest" ]; then
	echo "ntb: the kernel's NTB selftest (ntb_test.sh, unmodified), guest 0 against guest 1, per profile:"
	cat "$work"/g*.log | tr -d '\r' | sed -n 's/^SIO-NTB SELFTEST /ntb:   /p'
fi
echo "ntb: measured in TCG guests over ntb_hw_ivshmem (emulated CPUs; says nothing of NTB hardware):"
cat "$work"/g*.log | tr -d '\r' | sed -n 's/^SIO-VM MEASURE /ntb:   /p'
nfail=$(cat "$work"/g*.log "$work/host.log" | tr -d '\r' | grep -c '^SIO-VM FAIL' || true)
npass=$(cat "$work"/g*.log "$work/host.log" | tr -d '\r' | grep -c '^SIO-VM PASS' || true)
# Last, where the logs are long: each guest's first failure and what led to it.
[ "$nfail" -eq 0 ] && [ $fail -eq 0 ] || ntb_failure_report
echo "ntb: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ] && [ $fail -eq 0 ]
