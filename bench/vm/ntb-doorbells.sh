#!/bin/sh
# SPDX-License-Identifier: MIT
#
# A remote client's doorbells relayed against through the lender's window
# onto BAR0, and a local client, on the same guests in one run (a
# benchmark, not a test): the three QEMU guests of the ntb-fabric vm suite
# (Debian's kernel, TCG). Guest 0 lends its QEMU NVMe over the ntb fabric,
# ROUNDS times each way, alternating: with ntb_hw_ivshmem's bar_fwd=1 the
# lender's windows onto BAR0 are accepted and guest 1 stores its doorbells
# through its outbound window, which ntb_hw_ivshmem forwards to BAR0 from a
# kernel thread (an emulated translation: NTB hardware would make it one
# posted write); with bar_fwd=0 they are refused and the lender's relay
# forwards them from a mirror. Each time guest 0 (local) and guest 1
# (remote) read with nvme-client, QD1 4 KiB random reads, -t seconds each.
# Reports, per path, the median of the rounds' p50 and p99 and the ratios
# remote / local and relayed / window; writes ntb-doorbells.json and .png
# to -o. These are TCG figures of an emulated translation: they say what
# the relay costs against a forwarding thread in the lender's kernel under
# emulation, not what NTB hardware does.
#
# usage: bench/vm/ntb-doorbells.sh BUILD_DIR [-t SECONDS] [-r ROUNDS] [-o DIR]
#   -t: seconds per measured run (default 5); -r: rounds (default 3).
#   Exit 77 when QEMU, a kernel or the NTB modules are missing.
set -eu
prog=ntb-doorbells rt=5 rounds=3 out=bench-out/ntb-doorbells
# shellcheck source=bench/vm/lib.sh
. "$(dirname "$0")/lib.sh"
bench_args "$@"
[ "$rounds" -ge 1 ] || { echo "$prog: -r takes 1 round or more" >&2; exit 2; }

bench_work ntbdb
sed "s/@RUNTIME@/$rt/; s/@ROUNDS@/$rounds/" "$here/ntb-doorbells-guest.sh" >"$work/guest.sh"
# shellcheck disable=SC2016 # $work: run-ntb.sh's, in QEMU's arguments
export SIO_NTB_SUITE="$work/guest.sh" SIO_NTB_FINISH="g0 g1 g2" SIO_NTB_SHM_MB=256 SIO_NTB_MEM=384 \
	SIO_NTB_G0_ARGS='-drive file=$work/nvme.img,if=none,id=d0,format=raw -device nvme,serial=sio-ntbdb,drive=d0,addr=4' \
	SIO_VM_TIMEOUT=$((300 + rounds * 2 * (2 * rt + 60)))
bench_guests run-ntb.sh

mkdir -p "$out"
python3 "$here/ntb-doorbells.py" "$work" "$out" "$rt" "$rounds" || { keep; exit 1; }
bench_png ntb-doorbells
