# SPDX-License-Identifier: MIT
# NVMe over Fabrics beside smartio's ntb fabric, the guests' side (run-ntb.sh
# runs it with SIO_NTB_SUITE and SIO_NTB_NET=1): the three guests of the
# ntb-fabric suite, a network between them (virtio-net on a multicast
# socket of the host's loopback), and one QEMU NVMe in guest 0 reached from
# the others both ways, in turn:
#   NVMe-oF   guest 0's kernel target (nvmet, configfs) exports the NVMe's
#             namespace over TCP, and over RDMA where soft-RoCE (rdma_rxe)
#             comes up; guest 1 connects with nvme-tcp, guest 2 with
#             nvme-rdma (nvme-tcp without RDMA), both through
#             /dev/nvme-fabrics; guest 1 writes blocks with CRC32C headers
#             that guest 2 reads back, and the other way round
#   smartio   guest 0 gives the controller to vfio and lends it over the ntb
#             fabric (doorbells relayed); guest 1's fio with the smartio
#             engine reads back both NVMe-oF guests' blocks and writes its
#             own, which guest 0's kernel nvme driver, given the controller
#             back, reads back
# A smoke run with data checks; bench/vm/nvmeof-vs-smartio.sh measures.
#
# want: g0:net-up g1:net-up g2:net-up g0:ntb-up g1:ntb-up g2:ntb-up
# want: g0:fabric-create g1:fabric-join g2:fabric-join g0:nvmet-export
# want: g1:connect g2:connect g1:oft-write-verify g2:oft-reads-guest1
# want: g2:oft-write-verify g1:oft-reads-guest2 g0:lend
# want: g1:smartio-reads-guest1 g1:smartio-reads-guest2 g1:smartio-write-verify
# want: g0:kernel-reads-smartio g0:dmesg g1:dmesg g2:dmesg
# shellcheck disable=SC2046,SC2034 # fio's options (word-split), the libraries' n, RUN_LIMIT
. /vm/guest.sh	# res, ok, no, run, until_ok, kernel_nvme_blk
G=$(sed -n 's/.*sio\.guest=\([0-9]*\).*/\1/p' /proc/cmdline)
. /vm/nvmeof.sh	# nvmeof_start, nvmet_export, nvmeof_connect, ntb_lend
. /vm/ntb-sync.sh	# phase
n=0
RUN_LIMIT=120
# blocks with CRC32C headers: written by guest W at 8 MiB + W MiB
ver() { echo "--name=ver --bs=4k --rw=write --size=1m --offset=$((8 + $1))m --verify=crc32c --randseed=$1"; }
KIO="--ioengine=io_uring --direct=1 --iodepth=8"
SIO="--ioengine=external:/prog/fio-smartio.so --iodepth=8"

nvmeof_start
if [ "$G" = 0 ]; then
	nvmet_export "$BLK" && ok nvmet-export ||
		no nvmet-export "configfs refused the subsystem or a port of $BLK"
fi
phase exported

# -- NVMe-oF: guest 1 over TCP, guest 2 over RDMA where it runs
if [ "$G" != 0 ]; then
	tr=tcp
	[ "$G" = 2 ] && [ "$RDMA" = 1 ] && tr=rdma
	nvmeof_connect $tr >/tmp/con 2>&1 && ok connect || no connect "$(cat /tmp/con)"
	sed 's/^/    | /' /tmp/con
	run oft-write-verify fio $(ver "$G") --filename="$BLK" $KIO
fi
phase oft-written
case $G in
1)	run oft-reads-guest2 fio $(ver 2) --filename="$BLK" $KIO --verify_only=1 ;;
2)	run oft-reads-guest1 fio $(ver 1) --filename="$BLK" $KIO --verify_only=1 ;;
esac
[ "$G" != 0 ] && nvmeof_disconnect
phase oft-done

# -- smartio: the same controller lent over the ntb fabric
if [ "$G" = 0 ]; then
	nvmet_unexport || no nvmet-unexport "configfs kept the subsystem"
	ntb_lend
fi
phase lent
if [ "$G" = 1 ]; then
	run smartio-reads-guest1 fio $(ver 1) $SIO --verify_only=1 &&
		run smartio-reads-guest2 fio $(ver 2) $SIO --verify_only=1
	run smartio-write-verify fio $(ver 3) $SIO
fi
phase smartio-done
if [ "$G" = 0 ]; then
	ntb_unlend
	run kernel-reads-smartio fio $(ver 3) --filename="$BLK" $KIO --verify_only=1
	smartio destroy $FAB --force >/dev/null 2>&1
fi
dmesg_check dmesg
phase "done"
echo "nvmeof: guest $G took $(cut -d' ' -f1 /proc/uptime)s of uptime"
