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
#   SIO_VM_KERNEL picks the kernel (kernel/kver.sh); SIO_VM_TIMEOUT (s) bounds
#   the whole boot; SIO_VM_SUITE=FILE runs another guest script instead.
#   SIO_VM_IOMMU=0 boots without the emulated VT-d; SIO_VM_APPEND adds to the
#   kernel command line (the uio suite: no IOMMU, hugepages=N). SIO_VM_MODULES
#   names .ko files to put in the guest's /lib/modules.
set -eu

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=${3:-}
skip() { echo "SKIP: $*"; exit 77; }
# meson test sets MALLOC_PERTURB_ for every test; QEMU is not the code under
# test here, and with it QEMU itself was seen to crash.
unset MALLOC_PERTURB_

qemu=$(command -v qemu-system-x86_64 || true)
[ -n "$qemu" ] || skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
for t in busybox cpio gzip modprobe; do
	command -v $t >/dev/null 2>&1 || [ "$t" = cpio ] ||
		skip "$t not installed (apt-get install busybox-static kmod)"
done
busybox=$(command -v busybox)
! ldd "$busybox" >/dev/null 2>&1 ||
	skip "$busybox is not static (apt-get install busybox-static)"

# The kernel (kernel/kver.sh: the newest installed, or $SIO_VM_KERNEL, an
# installed one or one kernel/fetch-kernel.sh unpacked) and its modules' root.
kv="$src/../../kernel/kver.sh"
kernel=$(sh "$kv" --image) && kver=$(sh "$kv") && kroot=$(sh "$kv" --root) ||
	skip "no kernel ${SIO_VM_KERNEL:-in /boot} with its modules (apt-get install linux-image-amd64, or kernel/fetch-kernel.sh)"

if [ -z "$work" ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/sio-vm.XXXXXX")
	trap 'rm -rf "$work"' EXIT
fi
root=$work/root
mkdir -p "$root/bin" "$root/lib/modules" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" \
	"$root/run" "$root/prog" "$root/etc"
cp "$busybox" "$root/bin/busybox"

# Programs: the tool, our checks, and the NVMe driver's programs when built.
progs=""
for p in smartio vfio-nvme nvme-identify nvme-manager nvme-client nvme-mcast-identify nvme-lend edu-dma edu-lend; do
	f=$(find "$build" -name "$p" -type f -perm -u+x -not -path '*/meson-*' 2>/dev/null | head -n1)
	[ -n "$f" ] && progs="$progs $f"
done
# SIO_VM_EXTRA: more files for a sibling script's guest suite (fio, say), same way.
progs="$progs ${SIO_VM_EXTRA:-}"
for f in $progs; do
	cp "$f" "$root/prog/"
	# Their shared libraries, and the loader, at the same paths as here.
	ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' |
	while read -r lib; do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
done

# Modules, in the order modprobe would load them (dependencies first).
modlist() {
	for m in "$@"; do modprobe -d "$kroot" -S "$kver" --show-depends "$m" 2>/dev/null; done |
		awk '$1 == "insmod" && !seen[$2]++ {print $2}'
}
for set in "vfio:vfio-pci vfio_iommu_type1" "nvme:nvme" "uio:uio_pci_generic"; do
	name=${set%%:*}
	: >"$root/lib/modules/$name.list"
	for ko in $(modlist ${set#*:}); do
		b=$(basename "$ko")
		case $b in
		*.ko.xz) xz -dc "$ko" >"$root/lib/modules/${b%.xz}"; b=${b%.xz} ;;
		*.ko.zst) zstd -qdc "$ko" >"$root/lib/modules/${b%.zst}"; b=${b%.zst} ;;
		*) cp "$ko" "$root/lib/modules/$b" ;;
		esac
		echo "$b" >>"$root/lib/modules/$name.list"
	done
done
[ -s "$root/lib/modules/vfio.list" ] || skip "kernel $kver has no vfio-pci module"
# SIO_VM_MODULES: modules built out of tree (the NTB suite's), into /lib/modules as they are.
for ko in ${SIO_VM_MODULES:-}; do cp "$ko" "$root/lib/modules/"; done

cp "$src/guest-init.sh" "$root/init"
cp "${SIO_VM_SUITE:-$src/guest-suite.sh}" "$root/suite.sh"
mkdir -p "$root/vm"
cp "$src"/lib/guest.sh "$src"/lib/lend.sh "$root/vm/"	# the guest suites' libraries
chmod +x "$root/init"
if command -v cpio >/dev/null 2>&1; then
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1 >"$work/initramfs.gz")
else
	(cd "$root" && find . | "$busybox" cpio -o -H newc | gzip -1 >"$work/initramfs.gz")
fi

# SIO_VM_BUILD_ONLY: the initramfs is all the caller wants (run-multi.sh).
[ -z "${SIO_VM_BUILD_ONLY:-}" ] || exit 0

# Sparse images: the main controller, a CMB controller with two namespaces
# (512 B and 4 KiB LBAs), a small-MDTS controller with two I/O queue pairs.
# Two more controllers without storage sit behind a PCIe-to-PCI bridge, so
# they share one IOMMU group (for the "group not viable" check).
for i in main ns1 ns2 small; do truncate -s 64M "$work/$i.img"; done
log=$work/console.log
echo "vm: kernel $kver, $(echo $progs | wc -w) programs, initramfs $(du -k "$work/initramfs.gz" | cut -f1) KiB"
iommu="-device intel-iommu,intremap=on,caching-mode=on" kiommu=intel_iommu=on
[ "${SIO_VM_IOMMU:-1}" = 0 ] && iommu="" kiommu=intel_iommu=off
start=$(date +%s)
set +e
timeout "${SIO_VM_TIMEOUT:-300}" "$qemu" -nodefaults -no-user-config -display none \
	-machine q35 -accel tcg,thread=multi -cpu max -smp 2 -m 768 \
	$iommu \
	-kernel "$kernel" -initrd "$work/initramfs.gz" \
	-append "console=ttyS0 $kiommu quiet panic=-1 rdinit=/init ${SIO_VM_APPEND:-}" \
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
	</dev/null >"$log" 2>&1
qrc=$?
set -e
end=$(date +%s)
# Show the console (minus kernel noise) so meson's log has the whole story.
grep -v '^\[ *[0-9.]*\]' "$log" || true
echo "vm: QEMU exited $qrc after $((end - start)) s"
[ $qrc -eq 124 ] && { echo "vm: FAIL: the guest did not power off in time"; exit 1; }
grep -q '^SIO-VM DONE' "$log" || { echo "vm: FAIL: the suite did not finish"; exit 1; }
nfail=$(grep -c '^SIO-VM FAIL' "$log" || true)
npass=$(grep -c '^SIO-VM PASS' "$log" || true)
echo "vm: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ]
