#!/bin/sh
# Install what smartio needs to build, test and benchmark on Debian 12 (run as root).
set -e
export DEBIAN_FRONTEND=noninteractive
# libnvme's .pc requires json-c and openssl, which libnvme-dev does not pull in.
pkgs="build-essential meson ninja-build pkg-config liburing-dev libpciaccess-dev
      libhugetlbfs-dev libcriterion-dev libnvme-dev libjson-c-dev libssl-dev clang llvm gnuplot-nox
      systemd graphviz
      qemu-system-x86 linux-image-amd64 busybox-static cpio kmod xz-utils python3 valgrind libclang-rt-14-dev
      nvme-cli prometheus gcc-multilib libc6-dev-i386"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# fio, and the source of that very fio version for the smartio ioengine
# (bench/fio): an external engine is built against its headers and
# config-host.h. Debian's source lists give it: a deb-src line for bookworm,
# `apt-get source fio`, then ./configure as Debian's build does.
if ! command -v fio >/dev/null 2>&1 || ! command -v dpkg-source >/dev/null 2>&1; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends fio dpkg-dev >/dev/null
fi
fio_ver=$(fio --version)
fio_dir=/usr/local/src/smartio/$fio_ver
if [ ! -f "$fio_dir/config-host.h" ]; then
	src_list=/etc/apt/sources.list.d/smartio-deb-src.sources
	if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >"$src_list"
		apt-get update -qq
	fi
	mkdir -p /usr/local/src/smartio
	rm -rf "$fio_dir"	# a half-made tree from an earlier try
	pkgver=$(dpkg-query -W -f='${Version}' fio)
	(cd /usr/local/src/smartio && apt-get source -qq "fio=$pkgver" >/dev/null 2>&1) &&
		(cd "$fio_dir" && ./configure --disable-native --prefix=/usr >/dev/null) ||
		echo "smartio: the fio source ($fio_ver) could not be fetched: the fio engine will not be built" >&2
fi
# The NTB modules (kernel/): the headers of the kernel the vm suite boots, and
# the NTB framework's sources from Debian's kernel source package of that
# kernel's version (Debian builds no ntb.ko), cached under /var/cache/smartio.
sh "$(dirname "$0")/../kernel/upstream.sh" ||
	echo "smartio: the NTB framework's sources could not be fetched: the NTB modules will not be built" >&2
# A second kernel, Debian 12's 6.12, unpacked (not installed) for the
# modules' build and one vm test on it (-Dkernel_alt), with its NTB sources.
k2=$(sh "$(dirname "$0")/../kernel/fetch-kernel.sh" 6.12) &&
	sh "$(dirname "$0")/../kernel/upstream.sh" "$k2" ||
	echo "smartio: Debian's 6.12 kernel could not be fetched: the NTB modules are built for one kernel" >&2
# checkpatch.pl, for the kernel code's style check (kernel/checkpatch.sh).
sh "$(dirname "$0")/../kernel/checkpatch.sh" /dev/null >/dev/null 2>&1 ||
	echo "smartio: checkpatch.pl could not be fetched: the checkpatch test will fetch it" >&2
echo "smartio: build dependencies present"
