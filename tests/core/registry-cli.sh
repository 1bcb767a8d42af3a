#!/bin/bash
# A registry that defends itself: corrupt a fabric's registry the ways a bit
# flip, a crash or a process of the fabric gone wrong would, then run the
# tools on it. Each must fail with a message saying what is wrong: no crash,
# no hang (each run is bounded by timeout), nothing done with the registry.
# Its owner can still destroy it. Usage: registry-cli.sh SMARTIO REGPOKE
# NVME-EMU NVME-IDENTIFY
set -u
S=$1 POKE=$2 EMU=$3 IDENT=$4
export SMARTIO_QUIET=1 SMARTIO_LOCK_TIMEOUT_MS=500
F=t-regcli-$$
D=${SMARTIO_RUNDIR:-/dev/shm}/smartio-$F
R=$D/registry
out=$(mktemp)
sleeper=
trap '"$S" destroy "$F" --force >/dev/null 2>&1; [ -n "$sleeper" ] && kill $sleeper; rm -f "$out" /tmp/regcli-victim-$$' EXIT
pass=0 fail=0

. "$(dirname "$0")/refuses.sh"

works() {
	local d=$1 rc
	shift
	timeout 20 "$@" >"$out" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then bad "$d: exit status $rc"; else pass=$((pass + 1)); fi
}

fresh() {
	"$S" destroy "$F" --force >/dev/null 2>&1
	"$S" create "$F" --nodes 2 >/dev/null || { echo "FAIL: cannot create $F"; exit 1; }
}

# Every tool refuses the fabric; then its owner destroys it.
all_refuse() {
	local d=$1 want=$2
	refuses "$d: smartio status" "$want" "$S" status "$F"
	refuses "$d: smartio status --json" "$want" "$S" status "$F" --json
	refuses "$d: smartio path" "$want" "$S" path "$F" node:0 node:1
	refuses "$d: smartio link" "$want" "$S" link "$F" 1 down
	refuses "$d: nvme-emu" "$want" "$EMU" --fabric "$F" --backing ram:4M
	refuses "$d: nvme-identify" "$want" "$IDENT" --fabric "$F"
	works "$d: smartio destroy" "$S" destroy "$F"
	if [ -e "$D" ] || [ -L "$D" ]; then bad "$d: destroy left $D behind"; fi
}

fresh; "$POKE" "$R" fill 0xff 4096
all_refuse "0xff over the header" "bad magic number"

fresh; "$POKE" "$R" topo.adapters 0 -1
all_refuse "adapters -1" "adapter count out of range"

fresh; "$POKE" "$R" version 0 1
all_refuse "another version" "version 1"

fresh; : > "$R"
all_refuse "truncated to 0" "registry is 0 bytes"

fresh; echo keep > /tmp/regcli-victim-$$; rm "$R"; ln -s /tmp/regcli-victim-$$ "$R"
all_refuse "registry replaced by a symlink" "symbolic link"
if [ "$(cat /tmp/regcli-victim-$$)" != keep ]; then echo "FAIL: the symlink's target changed"; fail=$((fail + 1)); fi

fresh; "$POKE" "$R" seg.used 5 1; "$POKE" "$R" seg.owner 5 9999
all_refuse "segment owner slot 9999" "segment slot 5 names owner process slot 9999"

fresh; "$POKE" "$R" dev.used 3 1; "$POKE" "$R" dev.id 3 7; "$POKE" "$R" dev.nbars 3 200
all_refuse "device with 200 BARs" "200 BARs"

fresh; "$POKE" "$R" borrow.used 2 1; "$POKE" "$R" borrow.dev 2 100
all_refuse "borrow of device slot 100" "borrow 2 names device slot 100"

fresh; "$POKE" "$R" group.used 1 1; "$POKE" "$R" group.nsubs 1 100000
all_refuse "multicast group with 100000 subscribers" "100000 subscribers"

fresh; "$POKE" "$R" proc.used 7 1; "$POKE" "$R" proc.pid 7 1; "$POKE" "$R" proc.node 7 -3
all_refuse "process on node -3" "process slot 7 names pid 1 on node -3"

fresh; "$POKE" "$R" next_dev_id 0 0xffffffff
all_refuse "next device id 4294967295" "next device id is 4294967295"

# A lock word naming a live process that is not of the fabric (it does
# not map the registry): a forged word, taken over; the tools work.
fresh; sleep 300 & sleeper=$!
"$POKE" "$R" lock 0 $sleeper
works "lock held by a live stranger: status" "$S" status "$F"
works "lock held by a live stranger: link" "$S" link "$F" 1 down
kill $sleeper; sleeper=

# A lock word naming no live thread is taken over: the tools work.
fresh; "$POKE" "$R" lock 0 0x3ffffffe
works "lock of a dead holder: status" "$S" status "$F"
works "lock of a dead holder: link" "$S" link "$F" 1 down

# A registry that is a directory (with something in it): refused by every
# tool, and its owner still destroys the fabric, that directory and all.
fresh; rm -f "$R"; mkdir "$R"; touch "$R/x"
all_refuse "registry is a directory" "cannot open its registry: Is a directory"
fresh

# A negative node id never indexes the registry.
refuses "SMARTIO_NODE=-2" "not a node id" env SMARTIO_NODE=-2 "$EMU" --fabric "$F" --backing ram:4M
works "destroy" "$S" destroy "$F"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
