# SPDX-License-Identifier: MIT
# NVMe over Fabrics in the NTB guests, beside smartio's ntb fabric: the
# network (run-ntb.sh with SIO_NTB_NET=1 gives each guest a virtio-net on
# one segment), the kernel's nvmet target over TCP (and RDMA over soft-RoCE,
# rdma_rxe, where it comes up) in guest 0, nvme-tcp and nvme-rdma in the
# others, and the ntb fabric's lending of the same controller. Sourced
# from /vm/nvmeof.sh after /vm/guest.sh (ok, no, run, until_ok) and
# /vm/ntb-sync.sh (modset, net_up, phase) by
# nvmeof-suite.sh and bench/vm/nvmeof-vs-smartio-guest.sh; G is the guest.
NQN=nqn.2014-08.org.smartio:vm-nvmeof
FAB=nvmeoffab
MAIN=0000:00:04.0	# QEMU's NVMe (guest 0 only)
TARGET=10.38.0.1	# guest 0's address; guest N's is 10.38.0.N+1
CFS=/sys/kernel/config/nvmet
export SMARTIO_FABRIC_BACKEND=ntb SMARTIO_FABRIC=$FAB SMARTIO_QUIET=1

# rdma_up: soft-RoCE on eth0 (rdma_rxe, linked with iproute2's rdma
# through the RDMA netlink); RDMA=1 when it is there, else the reason
# is said (SKIP rdma) and RDMA=0
RDMA=0
rdma_up() {
	if ! modset rdma >/tmp/rdma 2>&1; then
		res SKIP rdma "the soft-RoCE modules did not load: $(cat /tmp/rdma)"
		return 0
	fi
	command -v rdma >/dev/null || { res SKIP rdma "no rdma tool (iproute2) in /prog"; return 0; }
	if ! rdma link add rxe0 type rxe netdev eth0 >/tmp/rdma 2>&1; then
		res SKIP rdma "rdma link add rxe0 over eth0 failed: $(cat /tmp/rdma) $(dmesg | grep -i 'rxe\|rdma\|infiniband' | tail -n 3)"
		return 0
	fi
	rdma link show | sed 's/^/    | /'
	RDMA=1
	ok rdma-up
}

# nvmet_export DEV: guest 0's kernel target exports block device DEV as
# namespace 1 of $NQN, on TCP port 4420 and, with RDMA, RDMA port 4420
nvmet_export() {
	[ -d $CFS ] || mount -t configfs none /sys/kernel/config
	s=$CFS/subsystems/$NQN
	mkdir -p $s/namespaces/1 &&
		echo 1 >$s/attr_allow_any_host &&
		printf %s "$1" >$s/namespaces/1/device_path &&
		echo 1 >$s/namespaces/1/enable || return 1
	nvmet_port 1 tcp || return 1
	[ "$RDMA" = 0 ] || nvmet_port 2 rdma
}
# nvmet_port ID TRANSPORT: a port on $TARGET:4420, the subsystem linked in
nvmet_port() {
	p=$CFS/ports/$1
	mkdir -p $p && echo "$2" >$p/addr_trtype && echo ipv4 >$p/addr_adrfam &&
		echo $TARGET >$p/addr_traddr && echo 4420 >$p/addr_trsvcid &&
		ln -s $CFS/subsystems/$NQN $p/subsystems/$NQN
}
# nvmet_unexport: the ports and the subsystem gone, the device closed
nvmet_unexport() {
	for p in $CFS/ports/*; do
		[ -d "$p" ] || continue
		rm -f "$p/subsystems/$NQN" && rmdir "$p"
	done
	s=$CFS/subsystems/$NQN
	echo 0 >$s/namespaces/1/enable && rmdir $s/namespaces/1 && rmdir $s
}

# nvmeof_connect TRANSPORT: connect to guest 0's target through
# /dev/nvme-fabrics; CTRL (nvmeN) and BLK (its namespace's block device)
nvmeof_connect() {
	CTRL="" BLK=""
	[ -c /dev/nvme-fabrics ] || { echo "no /dev/nvme-fabrics"; return 1; }
	printf 'transport=%s,traddr=%s,trsvcid=4420,nqn=%s' "$1" $TARGET $NQN \
		>/dev/nvme-fabrics || { echo "the $1 connect to $TARGET failed"; return 1; }
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/transport" 2>/dev/null)" = "$1" ] && CTRL=${c##*/}
	done
	[ -n "$CTRL" ] || { echo "no controller of transport $1"; return 1; }
	until_ok 30 sh -c "ls -d /sys/class/nvme/$CTRL/nvme*n1 /sys/class/nvme/$CTRL/nvme*c*n1 2>/dev/null | grep -q ." ||
		{ echo "$CTRL shows no namespace"; return 1; }
	# with native multipath the block device is the head's (nvmeXnY), else the path's
	ns=$(ls -d /sys/class/nvme/$CTRL/nvme*n1 2>/dev/null | head -n 1)
	ns=${ns##*/}
	case $ns in *c*n*) ns=$(echo "$ns" | sed 's/c[0-9]*n/n/') ;; esac
	until_ok 30 test -b "/dev/$ns" || { echo "no /dev/$ns"; return 1; }
	BLK=/dev/$ns
	echo "connected over $1: $CTRL, namespace $BLK"
}
# nvmeof_disconnect: the controller of the last connect deleted
nvmeof_disconnect() {
	[ -n "${CTRL:-}" ] && echo 1 >"/sys/class/nvme/$CTRL/delete_controller"
	CTRL="" BLK=""
}

# nvmeof_start: the network, soft-RoCE where it comes up, the ntb fabric
# (phase up: every guest's node service is there; NTB_ARGS, if set, are
# ntb_hw_ivshmem's further parameters), which guest 0 creates and the
# others join; guest 0's kernel nvme driver has the controller
# (BLK). The callers source /vm/ntb-sync.sh (phase).
nvmeof_start() {
	net_up nvmeof
	rdma_up
	# shellcheck disable=SC2086 # NTB_ARGS: ntb_hw_ivshmem's parameters, one word each
	ntb_up ${NTB_ARGS:-}
	phase up
	if [ "$G" = 0 ]; then
		run fabric-create smartio create $FAB --nodes 3
		BLK=$(kernel_nvme_blk $MAIN)
	else
		until_ok 60 smartio status $FAB && ok fabric-join || no fabric-join "$(cat /tmp/until)"
	fi
}

# The ntb fabric over ntb_hw_ivshmem, as ntb-fabric-suite.sh loads it:
# ntb_up [ARG...]: the modules (ARGs: ntb_hw_ivshmem's further parameters)
# and this kernel's node service, every peer's link up
ntb_up() {
	insmod /lib/modules/ntb.ko && insmod /lib/modules/ntb_hw_ivshmem.ko ports=3 link_timeout_ms=2000 "$@" &&
		insmod /lib/modules/smartio_ntb.ko && [ -c /dev/smartio-ntb0 ] ||
		{ no ntb-up "$(dmesg | grep -i ntb | tail -n 3)"; return 1; }
	smartio ntb serve >/tmp/serve.log 2>&1 &
	until_ok 90 sh -c "[ \$(grep -c 'link with port .* up' /tmp/serve.log) -ge 2 ]" &&
		ok ntb-up || { cat /tmp/serve.log; no ntb-up "no memory, or not every peer"; }
}
# ntb_lend: guest 0 gives QEMU's NVMe from the kernel's nvme driver to
# vfio (smartio vfio bind unbinds the other), lends it (nvme-lend, whose relay forwards the other kernels'
# doorbells) and serves it (nvme-manager); LPID, MPID
ntb_lend() {
	modset vfio
	run vfio-bind smartio vfio bind $MAIN || return 1
	nvme-lend $MAIN --fabric $FAB >/tmp/lend.log 2>&1 &
	LPID=$!
	until_ok 90 grep -q '^lending' /tmp/lend.log || { cat /tmp/lend.log; no lend; return 1; }
	dev=$(sed -n 's/.* as device \([0-9]*\) .*/\1/p' /tmp/lend.log)
	nvme-manager --fabric $FAB --device "$dev" --ready-file /tmp/mgr.ready >/tmp/mgr.log 2>&1 &
	MPID=$!
	until_ok 120 test -s /tmp/mgr.ready && ok lend || { cat /tmp/lend.log /tmp/mgr.log; no lend; }
}
# ntb_unlend: the manager and lender stopped, vfio-pci lets go and the
# kernel's nvme driver, probed again, takes the controller back; BLK its
# block device
ntb_unlend() {
	kill "$MPID" "$LPID"
	wait "$MPID" "$LPID" 2>/dev/null
	smartio vfio unbind $MAIN >/dev/null
	BLK=$(kernel_nvme_blk $MAIN)
}
