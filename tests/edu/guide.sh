#!/bin/sh
# docs/writing-a-driver.md, followed as a new user would: its whole program
# (my-edu.c) is taken from the guide, compiled on the public headers and the
# shared library alone, and run against the edu model on another node.
# Usage: guide.sh SMARTIO EDU-EMU SOURCE_ROOT LIBSMARTIO.so
S=$1 EMU=$2 SRC=$3 LIB=$4
cc=${CC:-cc}
command -v "$cc" >/dev/null || { echo "SKIP: no C compiler ($cc)"; exit 77; }
D=$(mktemp -d) F=guide-$$ E=
export SMARTIO_RUNDIR=$D SMARTIO_QUIET=1
trap '[ -n "$E" ] && kill $E 2>/dev/null; "$S" destroy "$F" --force >/dev/null 2>&1; rm -rf "$D"' EXIT
awk '/<!-- my-edu.c/ {on = 1; next} on && /^```c$/ {inblock = 1; next}
     inblock && /^```$/ {exit} inblock {print}' "$SRC/docs/writing-a-driver.md" >"$D/my-edu.c"
[ -s "$D/my-edu.c" ] || { echo "FAIL: no my-edu.c block in docs/writing-a-driver.md"; exit 1; }
# a sanitized build's library wants its runtime in the program too
san=
nm -D "$LIB" 2>/dev/null | grep -q __asan_ && san="$san -fsanitize=address"
nm -D "$LIB" 2>/dev/null | grep -q __ubsan_ && san="$san -fsanitize=undefined"
"$cc" -std=gnu11 -O2 -Wall -Wextra -Werror $san -I"$SRC/include" "$D/my-edu.c" \
	-L"$(dirname "$LIB")" -lsmartio -Wl,-rpath,"$(dirname "$LIB")" -o "$D/my-edu" ||
	{ echo "FAIL: the guide's program does not compile"; exit 1; }
"$S" create "$F" --nodes 2 >/dev/null || { echo "FAIL: create"; exit 1; }
"$EMU" --fabric "$F" --node 0 --ready-file "$D/ready" >"$D/emu.log" 2>&1 & E=$!
for i in $(seq 100); do [ -s "$D/ready" ] && break; sleep 0.05; done
out=$(SMARTIO_FABRIC=$F SMARTIO_NODE=1 timeout 60 "$D/my-edu" 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: my-edu exits $rc"; exit 1; }
echo "$out" | grep -q "is edu 1.0" || { echo "FAIL: no identification"; exit 1; }
echo "$out" | grep -q "bus address 0x[0-9a-f]\{1,7\}$" || { echo "FAIL: bus address not under 2^28"; exit 1; }
echo "$out" | grep -q "256 bytes went through the device and back, every byte checked" ||
	{ echo "FAIL: no DMA round trip"; exit 1; }
echo "guide: my-edu.c builds from the guide and runs"
