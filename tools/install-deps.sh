#!/bin/sh
# Install what smartio needs to build, test and benchmark on Debian 12 (run as root).
#
# Another package manager may hold dpkg's or apt's lock (a fresh Debian
# machine runs unattended-upgrades at boot): each step that uses apt waits
# for the lock, saying who holds it, up to $SMARTIO_APT_WAIT seconds
# (default 900), then fails. Nothing is skipped: a part that cannot be
# fetched fails the script, rather than leaving a build without it.
set -e
export DEBIAN_FRONTEND=noninteractive
apt_wait=${SMARTIO_APT_WAIT:-900}

# The pid holding one of dpkg's or apt's locks (the fcntl locks /proc/locks
# lists, matched by inode), or nothing.
apt_lock_holder() {
	for f in ${SMARTIO_APT_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock \
		 /var/lib/apt/lists/lock /var/cache/apt/archives/lock}; do
		[ -e "$f" ] || continue
		ino=$(stat -c %i "$f")
		awk -v ino="$ino" '$2 != "->" { split($6, d, ":"); if (d[3] == ino) { print $5; exit } }' \
			/proc/locks
	done | head -n 1
}

# Wait (bounded) until no package manager holds the locks; fail after.
wait_apt() {
	waited=0
	while pid=$(apt_lock_holder) && [ -n "$pid" ]; do
		if [ "$waited" -ge "$apt_wait" ]; then
			echo "smartio: $(cat "/proc/$pid/comm" 2>/dev/null || echo "pid $pid") (pid $pid)" \
				"still holds the package lock after ${apt_wait} s: giving up" \
				"(let it finish, or wait longer with SMARTIO_APT_WAIT=SECONDS)" >&2
			exit 1
		fi
		[ "$waited" -gt 0 ] || echo "smartio: waiting for" \
			"$(cat "/proc/$pid/comm" 2>/dev/null || echo another package manager) (pid $pid)," \
			"which holds the package lock (up to ${apt_wait} s)" >&2
		sleep 5
		waited=$((waited + 5))
	done
}

# apt-get once the lock is free; apt itself waits too, should another
# manager take the lock in between.
apt_get() {
	wait_apt
	apt-get -o DPkg::Lock::Timeout="$apt_wait" "$@"
}
wait_apt	# before anything: a machine just booted may be upgrading itself
# libnvme's .pc requires json-c and openssl, which libnvme-dev does not pull in.
# dwarves: pahole, with which kbuild writes a module's BTF where the headers
# ship a vmlinux (Debian's 6.12 from 6.12.117 on).
pkgs="build-essential meson ninja-build pkg-config liburing-dev libpciaccess-dev
      libhugetlbfs-dev libcriterion-dev libnvme-dev libjson-c-dev libssl-dev clang llvm gnuplot-nox
      systemd graphviz python3-sphinx
      qemu-system-x86 linux-image-amd64 busybox-static cpio kmod xz-utils python3 valgrind libclang-rt-14-dev
      nvme-cli prometheus gcc-multilib libc6-dev-i386 dwarves"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	apt_get update -qq
	apt_get install -y -qq --no-install-recommends $missing >/dev/null
fi
# fio, and the source of that very fio version for the smartio ioengine
# (bench/fio): an external engine is built against its headers and
# config-host.h. Debian's source lists give it: a deb-src line for bookworm,
# `apt-get source fio`, then ./configure as Debian's build does.
if ! command -v fio >/dev/null 2>&1 || ! command -v dpkg-source >/dev/null 2>&1; then
	apt_get update -qq
	apt_get install -y -qq --no-install-recommends fio dpkg-dev >/dev/null
fi
fio_ver=$(fio --version)
fio_dir=/usr/local/src/smartio/$fio_ver
if [ ! -f "$fio_dir/config-host.h" ]; then
	src_list=/etc/apt/sources.list.d/smartio-deb-src.sources
	if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >"$src_list"
		apt_get update -qq
	fi
	mkdir -p /usr/local/src/smartio
	rm -rf "$fio_dir"	# a half-made tree from an earlier try
	pkgver=$(dpkg-query -W -f='${Version}' fio)
	wait_apt
	(cd /usr/local/src/smartio && apt-get source -qq "fio=$pkgver" >/dev/null 2>&1) &&
		(cd "$fio_dir" && ./configure --disable-native --prefix=/usr >/dev/null) ||
		{ echo "smartio: the fio source ($fio_ver) could not be fetched or configured" >&2; exit 1; }
fi
# The NTB modules (kernel/): the headers of the kernel the vm suite boots, and
# the NTB framework's sources from Debian's kernel source package of that
# kernel's version (Debian builds no ntb.ko), cached under /var/cache/smartio.
wait_apt
sh "$(dirname "$0")/../kernel/upstream.sh" ||
	{ echo "smartio: the NTB framework's sources could not be fetched (the NTB modules need them)" >&2; exit 1; }
# A second kernel, Debian 12's 6.12, unpacked (not installed) for the
# modules' build and one vm test on it (-Dkernel_alt), with its NTB sources.
wait_apt
k2=$(sh "$(dirname "$0")/../kernel/fetch-kernel.sh" 6.12) &&
	sh "$(dirname "$0")/../kernel/upstream.sh" "$k2" ||
	{ echo "smartio: Debian's 6.12 kernel or its NTB sources could not be fetched (-Dkernel_alt=6.12 needs them)" >&2; exit 1; }
# checkpatch.pl, for the kernel code's style check (kernel/checkpatch.sh).
wait_apt
sh "$(dirname "$0")/../kernel/checkpatch.sh" /dev/null >/dev/null 2>&1 ||
	echo "smartio: checkpatch.pl could not be fetched: the checkpatch test will fetch it" >&2
echo "smartio: build dependencies present"
