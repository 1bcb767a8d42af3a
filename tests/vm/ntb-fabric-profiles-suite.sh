# SPDX-License-Identifier: MIT
# The ntb fabric over each hardware profile of ntb_hw_ivshmem (profile=,
# docs/ntb.md), the guests' side of run-ntb.sh: two guests, one boot, the
# modules loaded with each profile in turn (BAR2 cleared between two, as
# ntb-profiles-suite.sh does). On each: a node service in each guest, a
# fabric made by guest 0, segments made by guest 1 in both nodes' memory
# and read by guest 0, a waiter of guest 1 woken by guest 0 through the
# fabric's doorbell bit, a segment of guest 0 reached by guest 1 through a
# window of its own where the profile translates page by page (amd, epf,
# and idt, where guest 1 translates its own outbound window; intel's
# windows translate whole: the pool window, as the node service says),
# QEMU's NVMe of guest 0 lent (uio, no IOMMU) with
# nvme-manager, and from guest 1 nvme-identify and a verified nvme-client.
# What differs by profile is the backend's business: the bootstrap in
# scratchpads or, on idt, by message registers; the node's memory reached
# through inbound translation or, on idt, through the peer's outbound
# window translated to the address it was sent; the ports' numbers (idt:
# 0 and 2; switchtec and epf have none of their own: both sides say 0).
# Which profiles: the test's variants (run-ntb.sh's SIO_NTB_VARIANT, as
# sio.variant=): all five in CI (ntb-fabric-profiles).
#
# want-intel: g0:load-intel g1:load-intel g0:serve-intel g1:serve-intel g0:fabric-create-intel
# want-intel: g1:fabric-join-intel g0:seg-make-intel g1:seg-make-intel g0:seg-across-intel
# want-intel: g0:lend-intel g0:manager-intel g1:identify-intel g1:client-intel g1:doorbell-intel
# want-intel: g0:seg-pool-intel g1:seg-pool-intel
# want-amd: g0:load-amd g1:load-amd g0:serve-amd g1:serve-amd g0:fabric-create-amd
# want-amd: g1:fabric-join-amd g0:seg-make-amd g1:seg-make-amd g0:seg-across-amd g0:lend-amd
# want-amd: g0:manager-amd g1:identify-amd g1:client-amd g1:doorbell-amd g1:seg-own-amd
# want-amd: g0:seg-own-data-amd
# want-switchtec: g0:load-switchtec g1:load-switchtec g0:serve-switchtec g1:serve-switchtec
# want-switchtec: g0:fabric-create-switchtec g1:fabric-join-switchtec g0:seg-make-switchtec
# want-switchtec: g1:seg-make-switchtec g0:seg-across-switchtec g0:lend-switchtec
# want-switchtec: g0:manager-switchtec g1:identify-switchtec g1:client-switchtec
# want-switchtec: g1:doorbell-switchtec g0:sides-switchtec g1:sides-switchtec
# want-switchtec: g1:seg-own-switchtec g0:seg-own-data-switchtec
# want-epf: g0:load-epf g1:load-epf g0:serve-epf g1:serve-epf g0:fabric-create-epf
# want-epf: g1:fabric-join-epf g0:seg-make-epf g1:seg-make-epf g0:seg-across-epf g0:lend-epf
# want-epf: g0:manager-epf g1:identify-epf g1:client-epf g1:doorbell-epf g1:seg-own-epf
# want-epf: g0:seg-own-data-epf g0:sides-epf g1:sides-epf
# want-idt: g0:load-idt g1:load-idt g0:serve-idt g1:serve-idt g0:fabric-create-idt
# want-idt: g1:fabric-join-idt g0:seg-make-idt g1:seg-make-idt g0:seg-across-idt g0:lend-idt
# want-idt: g0:manager-idt g1:identify-idt g1:client-idt g1:doorbell-idt g1:seg-own-idt
# want-idt: g0:seg-own-data-idt g0:idt-by-message g1:idt-by-message
# want: g0:dmesg g1:dmesg
. /vm/guest.sh	# res, ok, no, run, until_ok
FAB=ntbfab
MOD=/lib/modules
MAIN=0000:00:04.0			# QEMU's NVMe (guest 0 only)
DEV=0000:00:10.0			# the NTB's ivshmem-doorbell function
G=$(sed -n 's/.*sio\.guest=\([0-9]*\).*/\1/p' /proc/cmdline)
LEND=uio PORTS=2
export SMARTIO_FABRIC_BACKEND=ntb SMARTIO_FABRIC=$FAB SMARTIO_QUIET=1
n=0
RUN_LIMIT=120
. /vm/ntb-sync.sh	# phase, dmesg_check
. /vm/ntb-fabric.sh	# load, serve, serve_log, client, lend

# the ports' numbers of guests 0 and 1 (the node ids), by profile; where
# the driver gives none (switchtec, epf) the node services agree on 0 and 1
# by a draw, and each says which it is
ports() {
	if [ "$1" = idt ]; then echo "0 2"; else echo "0 1"; fi
}

one() {
	PROFILE=$1 SUF=-$1
	set -- $(ports "$PROFILE")
	me=$(eval echo "\${$((G + 1))}") peer=$(eval echo "\${$((2 - G))}")
	phase "clear$SUF"
	# BAR2 holds the last profile's layout: cleared once every guest unloaded
	[ "$G" != 0 ] || ntb-scribble /sys/bus/pci/devices/$DEV/resource2 clear
	phase "load$SUF"
	load
	serve 1
	case $PROFILE in
	switchtec|epf)
		me=$(sed -n 's/.*this side is node \([01]\), the other.*/\1/p' /tmp/serve.log)
		[ -n "$me" ] && ok "sides$SUF" || no "sides$SUF" "the node service did not say which side it is"
		peer=$((1 - ${me:-0})) ;;
	esac
	phase "serve$SUF"
	if [ "$G" = 0 ]; then
		run "fabric-create$SUF" smartio create $FAB --nodes $(($2 + 1))
	else
		until_ok 60 smartio status $FAB && ok "fabric-join$SUF" || no "fabric-join$SUF" "$(cat /tmp/until)"
	fi
	phase "fabric$SUF"
	case $G in
	0)	run "seg-make$SUF" ntb-fabric seg-make "$me" 301 0xa5 ;;
	1)	run "seg-make$SUF" sh -c "ntb-fabric seg-make $peer 101 0x11 && ntb-fabric seg-make $me 102 0x12"
		ntb-fabric wait 201 >/tmp/wait.log 2>&1 &
		wpid=$!
		until_ok 30 grep -q waiting /tmp/wait.log ;;
	esac
	phase "seg-made$SUF"
	# the fabric's doorbell bit (the profile's highest) wakes guest 1's waiter
	[ "$G" = 0 ] && ntb-fabric notify "$peer" 201 | sed 's/^/    | /'
	if [ "$G" = 1 ]; then
		wait $wpid && ok "doorbell$SUF" || no "doorbell$SUF" "not woken through the doorbell"
		sed 's/^/    | /' /tmp/wait.log
		# a segment's own window where the profile translates page by page
		case $PROFILE in
		amd|epf|idt) run "seg-own$SUF" ntb-fabric xlat-check "$peer" 301 0xa5 own ;;
		# switchtec's window takes a segment aligned to its size, else the pool
		switchtec) run "seg-own$SUF" ntb-fabric xlat-check "$peer" 301 0xa5 either ;;
		esac
	fi
	case $PROFILE in
	intel) grep -q 'segments: pool window' /tmp/serve.log && ok "seg-pool$SUF" ||
		no "seg-pool$SUF" "the node service did not say segments go through the pool window" ;;
	esac
	phase "woken$SUF"
	if [ "$G" = 0 ]; then
		run "seg-across$SUF" sh -c "ntb-fabric seg-check $peer 102 0x12 && ntb-fabric seg-check $me 101 0x11"
		case $PROFILE in
		amd|epf|idt|switchtec) run "seg-own-data$SUF" ntb-fabric seg-check "$me" 301 0x5a ;;
		esac
		lend
		nvme-manager --fabric $FAB --device "$dev" --ready-file /tmp/mgr.ready >/tmp/mgr.log 2>&1 &
		mpid=$!
		until_ok 120 test -s /tmp/mgr.ready && ok "manager$SUF" || { cat /tmp/mgr.log; no "manager$SUF"; }
	fi
	phase "served$SUF"
	if [ "$G" = 1 ]; then
		until_ok 60 nvme-identify --fabric $FAB && ok "identify$SUF" || no "identify$SUF" "$(cat /tmp/until)"
		client "client$SUF" --lba 0 --count 128 --bs 4k --qd 2 --pattern 0xa1 --flush
	fi
	if [ "$PROFILE" = idt ]; then
		grep -q 'bootstrap by message registers' /tmp/serve.log &&
			grep -q "outbound window .* translated to port $peer's memory" /tmp/serve.log &&
			ok idt-by-message || no idt-by-message "the node service did not say so"
	fi
	phase "io$SUF"
	if [ "$G" = 0 ]; then
		rm -f /tmp/mgr.ready
		kill $mpid $lpid; wait $mpid $lpid
		smartio uio unbind $MAIN >/dev/null
		smartio destroy $FAB --force >/dev/null 2>&1
	fi
	phase "done$SUF"
	serve_log
	kill $spid; wait $spid
	rmmod smartio_ntb && rmmod ntb_hw_ivshmem && rmmod ntb || no "unload$SUF" "$(lsmod | grep ntb)"
}

[ "$G" != 0 ] || { mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages; }
# the profiles: the test's variants (SIO_NTB_VARIANT=intel,amd,epf,switchtec,idt), whose
# "# want-PROFILE:" lines count
for pr in $(sed -n 's/.*sio\.variant=\([a-z,]*\).*/\1/p' /proc/cmdline | tr , ' '); do one "$pr"; done
dmesg_check dmesg
