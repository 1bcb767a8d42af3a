#!/bin/bash
# Hostile input: every program is given numbers that are negative, overflow,
# carry trailing garbage, are empty, nan or inf, sizes it cannot back, unknown
# options and stray arguments. Each must exit 1 or 2 (never 0, never killed
# by a signal, never hang) with a message that quotes the bad value as given,
# and must not come up on the fabric. Usage: hostile-input.sh SMARTIO NVME-EMU
# NVME-IDENTIFY NVME-MANAGER NVME-CLIENT NVME-MCAST-IDENTIFY
set -u
S=$1 EMU=$2 IDENT=$3 MGR=$4 CLIENT=$5 MCAST=$6
export SMARTIO_QUIET=1 SMARTIO_LOCK_TIMEOUT_MS=500
unset SMARTIO_NODE
F=t-hostile-$$
out=$(mktemp)
trap '"$S" destroy "$F" --force >/dev/null 2>&1; "$S" destroy "$F-x" --force >/dev/null 2>&1; rm -f "$out"' EXIT
pass=0 fail=0

. "$(dirname "$0")/refuses.sh"

"$S" create "$F" --nodes 4 >/dev/null || { echo "FAIL: cannot create $F"; exit 1; }

# Numbers: each bad value, quoted back, for an option of each program.
for v in -3 -20 -40 abc 4294967298 18446744073709551617 99999999999999999999999 \
	 1x 0x 12abc " 1" "+1" "1 " nan inf ""; do
	refuses "smartio create --nodes '$v'" "'$v'" "$S" create "$F-x" --nodes "$v"
	refuses "nvme-emu --node '$v'" "'$v'" "$EMU" --fabric "$F" --node "$v" --backing ram:4M
	refuses "nvme-identify --node '$v'" "'$v'" "$IDENT" --fabric "$F" --node "$v"
	refuses "nvme-identify --device '$v'" "'$v'" "$IDENT" --fabric "$F" --device "$v"
	refuses "nvme-manager --io-queues '$v'" "'$v'" "$MGR" --fabric "$F" --io-queues "$v"
	refuses "nvme-client --qd '$v'" "'$v'" "$CLIENT" --fabric "$F" --qd "$v"
	refuses "nvme-client --time '$v'" "'$v'" "$CLIENT" --fabric "$F" --time "$v"
	refuses "nvme-mcast-identify --subscribers '$v'" "'$v'" "$MCAST" --fabric "$F" --subscribers "$v"
	refuses "smartio link NODE '$v'" "'$v'" "$S" link "$F" "$v" up
	refuses "smartio path node:'$v'" "'$v'" "$S" path "$F" "node:$v" node:0
done
for v in -3 abc 4294967298 12abc; do
	[ -n "$v" ] || continue
	refuses "SMARTIO_NODE='$v' nvme-emu" "'$v'" env SMARTIO_NODE="$v" "$EMU" --fabric "$F" --backing ram:4M
	refuses "SMARTIO_NODE='$v' nvme-identify" "'$v'" env SMARTIO_NODE="$v" "$IDENT" --fabric "$F"
	refuses "SMARTIO_LOCK_TIMEOUT_MS='$v' smartio status" "'$v'" env SMARTIO_LOCK_TIMEOUT_MS="$v" "$S" status "$F"
done

# Ids within the parser's range but not on this 4-node fabric.
refuses "nvme-emu --node 4 (a 4-node fabric)" "no node 4" "$EMU" --fabric "$F" --node 4 --backing ram:4M
refuses "nvme-identify --node 200" "no node 200" "$IDENT" --fabric "$F" --node 200
refuses "smartio link node 9" "no node 9" "$S" link "$F" 9 up
refuses "smartio link adapter 1 of 1" "not 1" "$S" link "$F" 0 1 up
refuses "nvme-identify --device 77 (none registered)" "no devices" "$IDENT" --fabric "$F" --device 77

# Other numbers the issue names.
refuses "smartio create --adapter-ns 99999999999" "'99999999999'" "$S" create "$F-x" --adapter-ns 99999999999
refuses "smartio create --window-size 1Q" "'1Q'" "$S" create "$F-x" --window-size 1Q
refuses "smartio create --window-size 99999999T" "'99999999T'" "$S" create "$F-x" --window-size 99999999T
refuses "nvme-client --time -1" "'-1'" "$CLIENT" --fabric "$F" --time -1
refuses "nvme-client --time 1e999" "'1e999'" "$CLIENT" --fabric "$F" --time 1e999
refuses "nvme-client --nsid 0" "'0'" "$CLIENT" --fabric "$F" --nsid 0
refuses "nvme-client --pattern 256" "'256'" "$CLIENT" --fabric "$F" --pattern 256
refuses "nvme-emu --backing ram:1T" "'ram:1T'" "$EMU" --fabric "$F" --backing ram:1T
refuses "nvme-emu --backing ram:16E" "'ram:16E'" "$EMU" --fabric "$F" --backing ram:16E
refuses "nvme-emu --backing ram:99999999T" "'99999999T'" "$EMU" --fabric "$F" --backing ram:99999999T
refuses "nvme-emu --ns 1T" "--ns" "$EMU" --fabric "$F" --backing ram:4M --ns 1T
refuses "nvme-emu --queues -1" "'-1'" "$EMU" --fabric "$F" --queues -1

# Names and options the issue named: a fabric called '-' (an option, or
# stdin, on every command line), a group that does not exist, LBAs of 0.
refuses "smartio create -" "starts with '-'" "$S" create -
refuses "SMARTIO_FABRIC=- smartio status" "starts with '-'" env SMARTIO_FABRIC=- "$S" status
refuses "smartio create --group (none such)" "nosuch-group-$$" "$S" create "$F-x" --group nosuch-group-$$
refuses "nvme-emu --lba 0" "'0'" "$EMU" --fabric "$F" --backing ram:4M --lba 0

# Unknown options and stray arguments.
refuses "smartio create --bogus" "bogus" "$S" create "$F-x" --bogus
refuses "smartio create NAME stray" "'stray'" "$S" create "$F-x" stray
refuses "smartio status NAME stray" "'stray'" "$S" status "$F" stray
refuses "smartio status --bogus" "'--bogus'" "$S" status "$F" --bogus
refuses "smartio path --bogus" "'--bogus'" "$S" path "$F" node:0 node:1 --bogus
refuses "smartio link sideways" "'up' or 'down'" "$S" link "$F" 0 sideways
for p in "$EMU" "$IDENT" "$MGR" "$CLIENT" "$MCAST"; do
	n=$(basename "$p")
	refuses "$n --bogus" "bogus" "$p" --fabric "$F" --bogus
	refuses "$n stray" "'stray'" "$p" --fabric "$F" stray
done
# smartio uio (where built): its arguments, refused before any device is touched.
if "$S" uio --help >/dev/null 2>&1; then
	refuses "smartio uio frob" "'frob'" "$S" uio frob
	refuses "smartio uio lend" "which function" "$S" uio lend --fabric "$F"
	refuses "smartio uio lend BDF stray" "'stray'" "$S" uio lend 00:04.0 stray --fabric "$F"
	refuses "smartio uio lend --bogus" "bogus" "$S" uio lend --bogus 00:04.0
	refuses "smartio uio bind BDF stray" "'stray'" "$S" uio bind 00:04.0 stray
	refuses "smartio uio bind 00:zz.0" "'00:zz.0'" "$S" uio bind 00:zz.0
fi

# fio's units and habits: a number that meant blocks or MiB before sizes
# became bytes is refused with what it meant, never taken as bytes; fio's
# option names point at ours; a negative id is out of range.
refuses "nvme-client --bs 8 (8 blocks before)" "--bs 4k" "$CLIENT" --fabric "$F" --bs 8
refuses "nvme-client --bs 4x" "'4x' is not a size" "$CLIENT" --fabric "$F" --bs 4x
refuses "nvme-client --bs 64m" "'64m' is out of range" "$CLIENT" --fabric "$F" --bs 64m
refuses "nvme-emu --cmb 16 (16 MiB before)" "--cmb 16m" "$EMU" --fabric "$F" --backing ram:4M --cmb 16
refuses "nvme-emu --cmb 1500k" "whole number of MiB" "$EMU" --fabric "$F" --backing ram:4M --cmb 1500k
refuses "nvme-client --time 3x" "'3x' is not a time" "$CLIENT" --fabric "$F" --time 3x
refuses "nvme-client --time 0s" "'0s' is out of range (1ms.." "$CLIENT" --fabric "$F" --time 0s
refuses "nvme-client --timeout -5ms" "out of range" "$CLIENT" --fabric "$F" --timeout -5ms
refuses "nvme-client --iodepth 32" "did you mean --qd?" "$CLIENT" --fabric "$F" --iodepth 32
refuses "nvme-client --iodepth=32" "did you mean --qd?" "$CLIENT" --fabric "$F" --iodepth=32
refuses "nvme-client --runtime 3" "did you mean --time?" "$CLIENT" --fabric "$F" --runtime 3
refuses "nvme-client --rw randread" "did you mean --op?" "$CLIENT" --fabric "$F" --rw randread
refuses "nvme-client --numjobs 4" "one job" "$CLIENT" --fabric "$F" --numjobs 4
refuses "nvme-client --radnom (a typo)" "did you mean --random?" "$CLIENT" --fabric "$F" --radnom
refuses "nvme-client --node -1" "'-1' is out of range (0..255)" "$CLIENT" --fabric "$F" --node -1
refuses "nvme-client --count -1" "'-1' is out of range" "$CLIENT" --fabric "$F" --count -1
refuses "smartio status --watch 0" "'0' is out of range (100ms..86400s)" "$S" status "$F" --watch 0
refuses "smartio status --watch 1x" "'1x' is not a time" "$S" status "$F" --watch=1x
refuses "smartio create --adapter-ns 2ms" "'2ms' is out of range" "$S" create "$F-x" --adapter-ns 2ms
refuses "smartio ntb serve --backgrund (a typo)" "did you mean --background?" "$S" ntb serve --backgrund

# Nothing of the above changed the fabric: still 4 nodes, no device.
timeout 20 "$S" status "$F" --json >"$out" 2>&1
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['nodes'] == 4 and d['devices'] == [] else 1)" "$out"; then
	pass=$((pass + 1))
else
	echo "FAIL: the fabric changed:"; sed 's/^/    /' "$out"; fail=$((fail + 1))
fi
if "$S" status "$F-x" >/dev/null 2>&1; then
	echo "FAIL: a refused 'smartio create' created $F-x"; fail=$((fail + 1))
fi

echo "hostile input: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
