# SPDX-License-Identifier: MIT
# The kernel's NTB selftest (tools/testing/selftests/ntb/ntb_test.sh, from
# the kernel's source as kernel/upstream.sh caches it; run-ntb.sh's
# SIO_NTB_SELFTEST puts it, bash and lib/ssh in /prog), run unmodified
# between two NTB guests as between two hosts: guest 0 is its local side,
# guest 1 its remote one (-r 10.38.0.2), reached by lib/ssh over the
# guests' network. Sourced by ntb-profiles-suite.sh from /vm after
# guest.sh and ntb-sync.sh; the suite sets G, MOD, DBG, DEV, T, SIZE and
# its profile's MWS, SPADS and MSGS.
#
# What the script runs, and what each part needs of the hardware's driver:
#   port      ntb_port_number(), ntb_peer_port_number()
#   link      ntb_link_disable() here, the peer's link seen down there
#   db        each valid doorbell bit rung (peer_db_set) and read there,
#             db_event with the mask cleared
#   spad      every scratchpad written here (peer_spad_write), read there;
#             "Unsupported" where ntb_tool makes no spadN: spad_count 0
#   msg       every message register written here (peer_msg_write), read
#             there; "Unsupported" where msg_count is 0
#   mw<i>     each window: a buffer there (mw_trans), this side's outbound
#             window translated to it (peer_mw_trans); its data compared
#   ping pong ntb_pingpong's count moving on both sides for 7 s
#   perf      ntb_perf from each side, by memcpy (-d, its DMA run, is not
#             asked for: the guests have no DMA engine)
#   MSI       ntb_msi_test, which kernel/build.sh does not build (it needs
#             the core's CONFIG_NTB_MSI, drivers/ntb/msi.c): the script
#             says "Not doing MSI tests"

# selftest_up: on every guest, the network, the NTB modules where modprobe
# finds them (the script loads the clients with modprobe, here and through
# ssh) and the ssh server
selftest_up() {
	net_up net || return 1
	d=/lib/modules/$(uname -r)/extra
	mkdir -p "$d"
	for m in ntb ntb_hw_ivshmem ntb_tool ntb_perf ntb_pingpong ntb_transport; do
		ln -f "$MOD/$m.ko" "$d/" || { no selftest-up "no $m.ko"; return 1; }
	done
	# kmod's (busybox's sh would run its own applet, whose index kmod's
	# modprobe does not read)
	/prog/depmod 2>/dev/null || { no selftest-up "depmod failed"; return 1; }
	nc -ll -p 22 -e /prog/ssh --serve &
	ok selftest-up
}

# st_parts OUT: the script's parts in its output OUT, a line each: NAME
# PASSED UNSUPPORTED (counts of "  Passed" and "  Unsupported" after its
# "Running ..." lines), and "msi-absent 0 0" where it said it did not do
# the MSI tests
st_parts() {
	awk '/^Running port tests/ { p = "port" } /^Running link tests/ { p = "link" }
		/^Running db tests/ { p = "db" } /^Running spad tests/ { p = "spad" }
		/^Running msg tests/ { p = "msg" } /^Running mw[0-9]+ tests/ { p = "mw" }
		/^Running ping pong tests/ { p = "pingpong" }
		/^Running (local|remote) perf test/ { p = "perf" }
		/^Running MSI interrupt tests/ { p = "msi" }
		/^  (Passed|Unsupported)/ { if (!(p in seen)) { o[++k] = p; seen[p] = 1 } }
		/^  Passed/ { pass[p]++ }
		/^  Unsupported/ { uns[p]++ }
		/^  Not doing MSI tests/ { nomsi = 1 }
		END { for (i = 1; i <= k; i++) print o[i], pass[o[i]] + 0, uns[o[i]] + 0
			if (nomsi) print "msi-absent 0 0" }' "$1"
}

# st_want PART PASSED [WHY]: the part passed PASSED times (both ways: a
# check per direction, a window per direction for mw); with WHY, the
# script must have found it unsupported on both sides instead, as the
# hardware's driver would not offer it
st_want() {
	got=$(grep "^$1 " /tmp/st.parts)
	if [ -z "${3:-}" ]; then
		if [ "$got" = "$1 $2 0" ]; then
			ok "st-$1-$pr"; ran="$ran $1"
		else
			no "st-$1-$pr" "wanted $2 passes, got: ${got:-none}"
		fi
	elif [ "$got" = "$1 0 2" ]; then
		res SKIP "st-$1-$pr" "Unsupported, as on that hardware: $3"
		notrun="$notrun; $1: Unsupported ($3)"
	else
		no "st-$1-$pr" "wanted Unsupported both ways ($3), got: ${got:-none}"
	fi
}

# selftest PROFILE: guest 0 runs ntb_test.sh against guest 1 over the
# profile (guest 2, a port of the three-port profiles with no client and
# its link disabled, is down for both and stays out of the ping pong's
# ring), then checks the windows' data itself (selftest_mw); each part's
# result, and a line for the host's summary
selftest() {
	pr=$1
	phase "selftest-$pr"
	if [ "$G" = 0 ]; then
		# -p 20, -w 1 MiB: ntb_perf moves 1 MiB per run (its default,
		# 4 GiB through a window the size of a region, is hours in TCG)
		run "selftest-$pr" timeout 2400 bash /prog/ntb_test.sh -r 10.38.0.2 -p 20 -w 1048576 "$DEV" "$DEV"
		cp /tmp/out /tmp/st.out
		st_parts /tmp/st.out >/tmp/st.parts
		ran="" notrun=""
		st_want port 1
		st_want link 2
		st_want db 2
		if [ "$SPADS" = 0 ]; then
			st_want spad 0 "the $pr driver has no scratchpads: no .spad_count, .spad_read, .peer_spad_write ops, so ntb_tool makes no spadN"
		else
			st_want spad 2
		fi
		if [ "$MSGS" = 0 ]; then
			st_want msg 0 "the $pr driver has no message registers: no .msg_count, .msg_read, .peer_msg_write ops, so ntb_tool makes no msgN"
		else
			st_want msg 2
		fi
		st_want mw $((2 * MWS))
		st_want pingpong 1
		st_want perf 2
		if grep -q '^msi-absent ' /tmp/st.parts; then
			res SKIP "st-msi-$pr" "ntb_msi_test is not built (the core's CONFIG_NTB_MSI, drivers/ntb/msi.c, is left out)"
		else
			no "st-msi-$pr" "the script did not say it left the MSI tests out"
		fi
		run "st-mwdata-$pr" selftest_mw && ran="$ran mw-data($MWS windows, both ways)"
		echo "SIO-NTB SELFTEST $pr: ran and passed:$ran; not run: perf with DMA (no DMA engine); msi (ntb_msi_test not built)$notrun"
	fi
	# the others wait as long as the script may run (minutes in TCG)
	PHASE_S=2700 phase "selftest-done-$pr"
}

# on HOST COMMAND: COMMAND here (HOST empty) or on HOST, as ntb_test.sh
# runs each side's part
on() { if [ -z "$1" ]; then bash -c "$2"; else ssh "$1" "$2"; fi; }

# selftest_mw: the windows' data. ntb_test.sh's mw_check() calls
# write_mw "$LOC/mw$IDX", but write_mw() takes the path as its second
# argument: its dd gets "of=" and writes nothing (6.1's script and 6.12's
# alike), so the check compares a window's untouched memory read through
# both ends. Here, as the script meant it: for each of the profile's
# windows, both ways, the receiver allocates it (mw_trans) and the sender
# translates its outbound window to the buffer (peer_mw_trans), as
# mw_alloc() does; the sender writes 64 KiB of random bytes through it
# (peer_mw) and the receiver reads them back (mw). Ports 0 and 1 are each
# other's peer 0.
selftest_mw() {
	r=10.38.0.2
	on "" "modprobe ntb_tool" && on $r "modprobe ntb_tool" &&
		on "" "echo Y >$T/link" && on $r "echo Y >$T/link" &&
		on "" "echo Y >$T/peer0/link_event" && on $r "echo Y >$T/peer0/link_event" ||
		{ echo "ntb_tool's link did not come up"; return 1; }
	bad=0
	for way in 0 1; do
		# guest 1 receives first, then guest 0
		if [ $way = 0 ]; then rx=$r tx="" from=0 to=1; else rx="" tx=$r from=1 to=0; fi
		i=0
		while [ $i -lt "$MWS" ]; do
			w=$(on "$rx" "echo $SIZE >$T/peer0/mw_trans$i && cat $T/peer0/mw_trans$i")
			a=$(echo "$w" | sed -n 's/^DMA Address[ \t]*\(0x[0-9a-fA-F]*\).*/\1/p')
			s=$(echo "$w" | sed -n 's/^Window Size[ \t]*\(0x[0-9a-fA-F]*\).*/\1/p')
			on "$tx" "echo $a:$((s)) >$T/peer0/peer_mw_trans$i && head -c $SIZE /dev/urandom >/tmp/w &&
				dd if=/tmp/w of=$T/peer0/peer_mw$i bs=4096 conv=notrunc 2>/dev/null && cat /tmp/w" >/tmp/want
			on "$rx" "cat $T/peer0/mw$i" >/tmp/got
			if [ "$(wc -c </tmp/want)" = "$SIZE" ] && cmp -n "$SIZE" /tmp/want /tmp/got; then
				echo "window $i, guest $from to guest $to (buffer at $a, $((s)) bytes): $SIZE random bytes arrived"
			else
				echo "window $i, guest $from to guest $to (buffer at $a): the data did not arrive"
				bad=1
			fi
			on "$tx" "echo $a:0 >$T/peer0/peer_mw_trans$i" && on "$rx" "echo 0 >$T/peer0/mw_trans$i" || bad=1
			i=$((i + 1))
		done
	done
	on "" "modprobe -r ntb_tool" && on $r "modprobe -r ntb_tool" || bad=1
	return $bad
}
