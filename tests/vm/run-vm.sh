#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The `vm` suite: boot Debian's kernel with a busybox initramfs holding the
# project's programs in QEMU (q35, emulated VT-d, TCG), with emulated NVMe
# controllers; the guest binds them to vfio-pci and runs guest-suite.sh, which
# prints one line per result on the serial console. Exit 0 when every check
# passed, 1 when one failed, 77 (meson: SKIP) when qemu or a kernel is missing.
#
# usage: run-vm.sh BUILD_ROOT SOURCE_DIR [WORK_DIR]  (a WORK_DIR given is kept)
# Its knobs (SIO_VM_*: the kernel, the time limit, the guest script, no
# VT-d, the kernel command line, more programs) are listed, with their
# defaults, in lib/host.sh's header.
set -eu
# shellcheck source=lib/host.sh
. "$2/lib/host.sh"
vm_setup "$1" "$2" "${3:-}" vm
vm_initramfs "${SIO_VM_SUITE:-$src/guest-suite.sh}" "${SIO_VM_EXTRA:-}" ""

# Sparse images: the main controller, a CMB controller with two namespaces
# (512 B and 4 KiB LBAs), a small-MDTS controller with two I/O queue pairs.
# Two more controllers without storage sit behind a PCIe-to-PCI bridge, so
# they share one IOMMU group (for the "group not viable" check).
for i in main ns1 ns2 small; do truncate -s 64M "$work/$i.img"; done
log=$work/console.log
echo "vm: kernel $kver, $(echo $progs | wc -w) programs, initramfs $(du -k "$work/initramfs.gz" | cut -f1) KiB"
iommu="-device intel-iommu,intremap=on,caching-mode=on" kiommu=intel_iommu=on
[ "${SIO_VM_IOMMU:-1}" = 0 ] && iommu="" kiommu=intel_iommu=off
qargs=$(printf '%s\n' "${SIO_VM_QEMU_ARGS:-}" | sed "s|\\\$work|$work|g")
start=$(date +%s)
set +e
timeout "${SIO_VM_TIMEOUT:-300}" "$qemu" -nodefaults -no-user-config -display none \
	-machine q35 -accel tcg,thread=multi -cpu max -smp 2 -m 768 \
	$iommu \
	-kernel "$kernel" -initrd "$work/initramfs.gz" \
	-append "console=ttyS0 $kiommu quiet panic=-1 no_timer_check rdinit=/init ${SIO_VM_APPEND:-}" \
	-serial stdio -no-reboot \
	-drive file="$work/main.img",if=none,id=d0,format=raw \
	-device nvme,serial=sio-main,drive=d0,addr=4 \
	-device nvme,id=n1,serial=sio-cmb,cmb_size_mb=16,addr=5 \
	-drive file="$work/ns1.img",if=none,id=d1,format=raw \
	-device nvme-ns,drive=d1,bus=n1,nsid=1,logical_block_size=512,physical_block_size=512 \
	-drive file="$work/ns2.img",if=none,id=d2,format=raw \
	-device nvme-ns,drive=d2,bus=n1,nsid=2,logical_block_size=4096,physical_block_size=4096 \
	-drive file="$work/small.img",if=none,id=d3,format=raw \
	-device nvme,serial=sio-small,drive=d3,mdts=2,max_ioqpairs=2,addr=6 \
	-device pcie-pci-bridge,id=pb,bus=pcie.0,addr=8 \
	-device nvme,serial=sio-grp1,bus=pb,addr=1 -device nvme,serial=sio-grp2,bus=pb,addr=2 \
	-device edu,addr=9 \
	$qargs \
	</dev/null >"$log" 2>&1
qrc=$?
set -e
end=$(date +%s)
# Show the console (minus kernel noise) so meson's log has the whole story.
vm_console "$log"
echo "vm: QEMU exited $qrc after $((end - start)) s"
[ $qrc -eq 124 ] && { echo "vm: FAIL: the guest did not power off in time"; exit 1; }
grep -q '^SIO-VM DONE' "$log" || { echo "vm: FAIL: the suite did not finish"; exit 1; }
nfail=$(grep -c '^SIO-VM FAIL' "$log" || true)
npass=$(grep -c '^SIO-VM PASS' "$log" || true)
echo "vm: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ]
