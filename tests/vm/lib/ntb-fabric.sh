# SPDX-License-Identifier: MIT
# The ntb fabric's steps in a guest, shared by the suites that run a fabric
# of backend ntb over ntb_hw_ivshmem (ntb-fabric-suite.sh,
# ntb-fabric-profiles-suite.sh, ntb-home-suite.sh, ntb-storm-suite.sh): the
# modules, the node service, a lender of QEMU's NVMe, a verified client,
# the relay's counters.
# Sourced from /vm/ntb-fabric.sh after /vm/guest.sh and /vm/ntb-sync.sh;
# the suite sets G, MOD, MAIN, FAB and LEND, and may set BARFWD (1:
# bar_fwd=1 in guest 0), PROFILE (ntb_hw_ivshmem's profile=; else
# sio.profile= of the command line), PORTS (3) and SUF (a suffix of the
# results' names: one suite's second round of a step).
# the relay's counters of the lent NVMe (smartio status): doorbells, us waited at most, us writing BAR0
relay_counters() {
	c=$(smartio status $FAB | sed -n 's/.*its relay forwarded \([0-9]*\) doorbells.* at most \([0-9]*\) us, wrote BAR0 in \([0-9]*\) us.*/\1 \2 \3/p' |
		head -n 1)
	echo "${c:-0 0 0}"
}
# relay_share BEFORE AFTER IOS: the relay's part of IOS reads, from the counters around them
relay_share() {
	echo "$1 $2" | awk -v ios="$3" 'NF == 6 && $4 > $1 { n = $4 - $1; w = $5 - $2; b = $6 - $3;
		printf "SIO-VM MEASURE relay-share: %d doorbells relayed for %d QD1 reads (%.1f a read); means a read: %.1f us writing BAR0 + at most %.1f us waiting for the relay'"'"'s look (a bound: the time between its looks): %.1f to %.1f us\n",
			n, ios, n / ios, b / ios, w / ios, b / ios, (w + b) / ios; ok = 1 }
		END { exit !ok }'
}
# load: the NTB and smartio_ntb
load() {
	XL=
	pr=${PROFILE:-$(sed -n 's/.*sio\.profile=\([a-z]*\).*/\1/p' /proc/cmdline)}
	# translations page by page where the profile has them (ivshmem's)
	[ "$LEND" = uio ] && [ "$G" != 2 ] && [ "${pr:-ivshmem}" = ivshmem ] && XL=page_xlat=1
	# a window onto BAR0, emulated (BARFWD: the suite's variant barfwd);
	# translated by pages (by whole regions it would span more than BAR0,
	# which the forwarding refuses)
	[ -n "$BARFWD" ] && [ "$G" = 0 ] && XL="page_xlat=1 bar_fwd=1"
	insmod $MOD/ntb.ko && insmod $MOD/ntb_hw_ivshmem.ko ports=${PORTS:-3} link_timeout_ms=2000 $XL \
		${pr:+profile=$pr} && insmod $MOD/smartio_ntb.ko && [ -c /dev/smartio-ntb0 ] &&
		ok "load$SUF" || no "load$SUF" "$(dmesg | grep -i ntb | tail -n 3)"
	bar64_check
	ME=$(dmesg | sed -n 's/.*NTB port \([0-9]*\) of.*/\1/p' | tail -n 1)
}
# serve PEERS: this kernel's node service, with PEERS links up (2: every
# peer; 1 after guest 2 was killed)
serve() {
	smartio ntb serve >/tmp/serve.log 2>&1 &
	spid=$!
	until_ok 90 sh -c "[ \$(grep -c 'link with port .* up' /tmp/serve.log) -ge $1 ]" &&
		ok "serve$SUF" || { cat /tmp/serve.log; no "serve$SUF" "no memory, or not every peer"; }
}
# serve_log: the service's log, and, where it is gone though nobody
# stopped it, how it ended (its status, and what the kernel said of it)
serve_log() {
	sed 's/^/    | serve: /' /tmp/serve.log
	[ -n "$spid" ] && [ "$spid" != "$serve_gone" ] && ! kill -0 "$spid" 2>/dev/null || return 0
	serve_gone=$spid	# said once; the suite's own wait finds it reaped
	wait "$spid"
	st=$?
	echo "    | serve: the node service (pid $spid) is gone: exit status $st$(
		[ $st -gt 128 ] && echo ", signal $((st - 128))")"
	dmesg | grep -i -E "out of memory|killed process|segfault|traps:|\[$spid\]" |
		sed 's/^/    | kernel: /' | tail -n 5
}
# links_new: what this kernel's NTB said of its links and its layout since
# the last look, with the kernel's timestamps: a reader sees, beside each
# phase's failures, when each link went down, why, and when it came back
links_new() {
	dmesg | grep -E "link with port|BAR2.s layout" >/tmp/links.now
	tail -n +$((${links_seen:-0} + 1)) /tmp/links.now | sed 's/^/    | kernel: /'
	links_seen=$(wc -l </tmp/links.now)
}
# phase_hook: at each phase, the links' moves since the last, and a node
# service that died since, said at once (how it ended, its log), not only
# when a later check needs it
phase_hook() {
	links_new
	[ -n "${spid:-}" ] && [ "$spid" != "${serve_gone:-}" ] && ! kill -0 "$spid" 2>/dev/null || return 0
	echo "    | the node service died before phase $n:"
	serve_log
}
# client NAME ARGS...: a verified nvme-client run
client() {
	name=$1; shift
	run "$name" nvme-client --timeout 30000 "$@"
}
# lend_start: QEMU's NVMe bound to $LEND and lent by the NVMe driver's
# lender, which describes the doorbells the relay forwards (lpid, dev);
# lend adds the checks of what it says
lend_start() {
	for m in $(cat /lib/modules/$LEND.list); do insmod /lib/modules/$m 2>/dev/null; done
	run bind smartio $LEND bind $MAIN
	# The log goes first: the shell opens it in the background job, after
	# the wait below may have read a former lend's "lending" (a suite that
	# lends once per profile)
	rm -f /tmp/lend.log
	nvme-lend $MAIN --fabric $FAB $([ $LEND = uio ] && echo --uio) >/tmp/lend.log 2>&1 &
	lpid=$!
	until_ok 90 grep -q '^lending' /tmp/lend.log && ok "lend$SUF" || { cat /tmp/lend.log; no "lend$SUF"; }
	dev=$(sed -n 's/.* as device \([0-9]*\) .*/\1/p' /tmp/lend.log)
}
lend() {
	lend_start
	sed 's/^/    | /' /tmp/lend.log
	if [ -n "$BARFWD" ]; then
		grep -q "other kernels' doorbells: stores through inbound window .*, by the NTB driver's emulated forwarding" \
			/tmp/lend.log && ok "lend-labelled$SUF" ||
			no "lend-labelled$SUF" "the lender did not say its window onto BAR0 is emulated"
	else
		grep -q "other kernels' doorbells: relayed.*Operation not supported" /tmp/lend.log &&
			ok "lend-labelled$SUF" || no "lend-labelled$SUF" "the lender did not say why it relays"
	fi
}
