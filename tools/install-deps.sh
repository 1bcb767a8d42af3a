#!/bin/sh
# Install what smartio needs to build, test and benchmark on Debian 12 (run as root).
set -e
export DEBIAN_FRONTEND=noninteractive
# libnvme's .pc requires json-c and openssl, which libnvme-dev does not pull in.
pkgs="build-essential meson ninja-build pkg-config liburing-dev libpciaccess-dev
      libhugetlbfs-dev libcriterion-dev libnvme-dev libjson-c-dev libssl-dev clang llvm gnuplot-nox
      qemu-system-x86 linux-image-amd64 busybox-static cpio kmod python3 valgrind libclang-rt-14-dev"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
echo "smartio: build dependencies present"
