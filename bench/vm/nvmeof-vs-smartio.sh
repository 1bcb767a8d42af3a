#!/bin/sh
# SPDX-License-Identifier: MIT
#
# smartio across kernels against NVMe over Fabrics, same guests, same run
# (a benchmark, not a test): the three QEMU guests of the ntb-fabric vm
# suite (Debian's kernel, TCG) on a network of this machine's loopback.
# Guest 0 has a QEMU NVMe; guest 1 reads it, in turn, ROUNDS times:
#   nvme-tcp    the kernel's nvmet in guest 0 exports it over TCP, guest 1's
#               nvme-tcp connects; fio, io_uring, O_DIRECT
#   nvme-rdma   the same over RDMA on soft-RoCE (rdma_rxe), where it runs
#   smartio-client, smartio-fio
#               guest 0 lends it over the ntb fabric (ntb_hw_ivshmem, the
#               doorbells relayed by guest 0's lender; with --window
#               stored through guest 1's window onto the NVMe's BAR0,
#               which guest 0's ntb_hw_ivshmem forwards: bar_fwd=1, an
#               emulated hardware feature); guest 1's nvme-client (its own
#               loop), then fio with the smartio engine
# 4 KiB random reads over 32 MiB at QD1 and QD32, -t seconds each. Per path
# (the median of the rounds): IOPS, p50/p99 latency, and CPU-seconds per
# I/O in each guest apart (from each guest's /proc/stat), with the kernel
# workers' and interrupts' share and the lender's processes apart; and the
# ratios smartio / NVMe/TCP; each path's CPU also above each guest's idle
# floor, from a run with no I/O in the same state just before (connected,
# or lent). Writes nvmeof-vs-smartio.json and .png, and
# the guests' consoles (gN.log, which nvmeof-vs-smartio.py reads), to -o.
# QEMU runs under TCG: absolute figures are emulation speed, and the host's
# other load moves them; read the ratios, taken in one run.
#
# usage: bench/vm/nvmeof-vs-smartio.sh BUILD_DIR [-t SECONDS] [-r ROUNDS] [-o DIR] [--window]
#   -t: seconds per measured run (default 10); -r: rounds (default 2);
#   --window: smartio's doorbells through the emulated window onto BAR0.
#   Exit 77 when QEMU, the kernel's modules, the NTB modules, fio or the fio
#   engine is missing.
set -eu
prog=nvmeof-vs-smartio rt=10 rounds=2 window=0 out=bench-out/nvmeof-vs-smartio
# shellcheck source=bench/vm/lib.sh
. "$(dirname "$0")/lib.sh"
bench_args "$@"
bench_fio
rdma=$(command -v rdma || true)	# iproute2's, for soft-RoCE in the guests

bench_work nvmeof
sed "s/@RUNTIME@/$rt/; s/@ROUNDS@/$rounds/; s/@WINDOW@/$window/" "$here/nvmeof-vs-smartio-guest.sh" \
	>"$work/guest.sh"
# shellcheck disable=SC2016 # $work: run-ntb.sh's, in QEMU's arguments
export SIO_NTB_SUITE="$work/guest.sh" SIO_NTB_EXTRA="$fio $engine $rdma" SIO_NTB_NET=1 \
	SIO_NTB_FINISH="g0 g1 g2" SIO_NTB_SHM_MB=256 SIO_NTB_MEM=384 \
	SIO_VM_MODSETS="nvmeof:virtio_pci,virtio_net,nvmet-tcp,nvme-tcp rdma:crc32_generic,rdma_rxe,nvmet-rdma,nvme-rdma" \
	SIO_NTB_G0_ARGS='-drive file=$work/nvme.img,if=none,id=d0,format=raw -device nvme,serial=sio-nvmeof,drive=d0,addr=4' \
	SIO_VM_TIMEOUT=$((400 + rounds * 11 * (rt + 15)))
bench_guests run-ntb.sh

mkdir -p "$out"
# the consoles beside the results: each guest's CPU samples, for a reader
for g in 0 1 2; do cp "$work/g$g.log" "$out/"; done
python3 "$here/nvmeof-vs-smartio.py" "$work" "$out" "$rt" "$rounds" "$window" || { keep; exit 1; }
bench_png nvmeof-vs-smartio
