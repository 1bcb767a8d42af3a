#!/bin/sh
# queue.h claims aarch64: compile it for that target (freestanding, so no
# C library for it is needed) and check that the doorbell and completion
# paths carry the outer-shareable barriers barrier.h promises. Skipped
# (exit 77) when clang, or its aarch64 target, is missing.
set -e
src=$1; clang=${CLANG:-clang}
if ! command -v "$clang" >/dev/null 2>&1; then
	echo "SKIP: no $clang to cross-compile for aarch64"
	exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
flags="--target=aarch64-linux-gnu -ffreestanding -nostdlibinc -std=c11 -O2"
if ! printf 'int x;\n' > "$tmp/probe.c" ||
   ! $clang $flags -S "$tmp/probe.c" -o "$tmp/probe.s" 2>/dev/null; then
	echo "SKIP: $clang has no aarch64 target"
	exit 77
fi
# A freestanding target has no <errno.h>: give it Linux's values.
mkdir "$tmp/sys"
printf '#define EINVAL 22\n#define EAGAIN 11\n#define EPROTO 71\n' > "$tmp/sys/errno.h"
cat > "$tmp/q.c" <<'EOT'
#include <smartio/nvme/queue.h>
void ring_sq(struct sio_nvme_queue *q) { sio_nvme_sq_ring(q); }
void ring_cq(struct sio_nvme_queue *q) { sio_nvme_cq_ring(q); }
int pop(struct sio_nvme_queue *q, struct sio_nvme_cpl *c, uint64_t *k)
{
	return sio_nvme_cq_pop(q, c, k);
}
EOT
$clang $flags -Wall -Wextra -Werror -isystem "$tmp/sys" -I"$src/include" -S "$tmp/q.c" \
	-o "$tmp/q.s" || { echo "FAIL: queue.h does not compile for aarch64"; exit 1; }
# The function bodies, each on its own: ring_sq needs a store barrier, pop
# and ring_cq a load barrier, before their doorbell or after the phase load.
body() { awk -v f="$1" '$0 ~ "^"f":" { on = 1 } on && /\.Lfunc_end/ { exit } on' "$tmp/q.s"; }
check() {
	if ! body "$1" | grep -Eq "dmb[[:space:]]+$2"; then
		echo "FAIL: $1 has no 'dmb $2' on aarch64:"; body "$1"; exit 1
	fi
}
check ring_sq oshst
check pop oshld
check ring_cq oshld
if grep -Eq 'dmb[[:space:]]+ish' "$tmp/q.s"; then
	echo "FAIL: an inner-shareable barrier (not enough against a device):"
	grep -En 'dmb[[:space:]]+ish' "$tmp/q.s"; exit 1
fi
echo "queue.h on aarch64: dmb oshst before the SQ doorbell, dmb oshld after the phase load and before the CQ doorbell"
