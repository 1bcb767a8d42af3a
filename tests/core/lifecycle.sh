#!/bin/sh
# Lifecycles: destroy refuses while processes are attached, --force makes
# them leave within a second; --ready-file failures are fatal; --time bounds
# a whole run. Usage: lifecycle.sh SMARTIO NVME-EMU NVME-MANAGER NVME-CLIENT
S=$1 EMU=$2 MGR=$3 CLI=$4
export SMARTIO_RUNDIR=$(mktemp -d) SMARTIO_QUIET=1
F=lc-$$ fails=0 E= M= C=
trap '"$S" destroy "$F" --force >/dev/null 2>&1; for p in $E $M $C; do kill $p 2>/dev/null; done; rm -rf "$SMARTIO_RUNDIR"' EXIT
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ms() { echo $(($(date +%s%N) / 1000000)); }
"$S" create "$F" --nodes 2 >/dev/null || { echo "FAIL: create"; exit 1; }

"$EMU" --fabric "$F" --ready-file /nonexistent/dir/ready >/dev/null 2>&1 &
E=$!; t0=$(ms)
while kill -0 $E 2>/dev/null && [ $(($(ms) - t0)) -lt 5000 ]; do sleep 0.1; done
if kill -0 $E 2>/dev/null; then bad "nvme-emu runs on after --ready-file failed"; kill $E
elif wait $E; then bad "nvme-emu exits 0 after --ready-file failed"; fi
E=

"$EMU" --fabric "$F" --ready-file "$SMARTIO_RUNDIR/ready" >/dev/null 2>&1 & E=$!
for i in $(seq 50); do [ -s "$SMARTIO_RUNDIR/ready" ] && break; sleep 0.1; done
"$MGR" --fabric "$F" --node 1 --quiet --device "$(cat "$SMARTIO_RUNDIR/ready")" \
	--ready-file "$SMARTIO_RUNDIR/mready" >/dev/null 2>&1 & M=$!
for i in $(seq 50); do [ -s "$SMARTIO_RUNDIR/mready" ] && break; sleep 0.1; done

t0=$(ms)
timeout 10 "$CLI" --fabric "$F" --node 1 --ios 18446744073709551615 --time 1 >/dev/null 2>&1
rc=$? el=$(($(ms) - t0))
[ $rc -eq 0 ] || bad "nvme-client --time 1 exits $rc"
[ $el -lt 4000 ] || bad "nvme-client --ios 2^64-1 --time 1 ran ${el} ms"

"$CLI" --fabric "$F" --node 1 --ios 18446744073709551615 >/dev/null 2>"$SMARTIO_RUNDIR/cli.err" & C=$!
sleep 0.5
out=$("$S" destroy "$F" 2>&1) && bad "destroy succeeds with processes attached"
for p in $E $M $C; do
	echo "$out" | grep -q "pid $p on node" || bad "destroy's refusal does not name pid $p: $out"
done
[ -d "$SMARTIO_RUNDIR/smartio-$F" ] || bad "a refused destroy removed the fabric"

t0=$(ms)
"$S" destroy "$F" --force || bad "destroy --force fails"
for p in $E $M $C; do
	while kill -0 $p 2>/dev/null && [ $(($(ms) - t0)) -lt 3000 ]; do sleep 0.05; done
	kill -0 $p 2>/dev/null && bad "pid $p still runs 3 s after destroy --force"
done
el=$(($(ms) - t0))
[ $el -lt 1500 ] || bad "processes took ${el} ms to leave a destroyed fabric"
wait $E || bad "nvme-emu exits non-zero on a destroyed fabric"
wait $M || bad "nvme-manager exits non-zero on a destroyed fabric"
grep -q "was destroyed" "$SMARTIO_RUNDIR/cli.err" || bad "nvme-client says nothing of the destroyed fabric"
E= M= C=
[ -d "$SMARTIO_RUNDIR/smartio-$F" ] && bad "destroy --force left the fabric"

# Destroys at the same time: none counts another as a process attached;
# each ends with the fabric gone, as asked, or finds none (one that
# starts once another is done).
"$S" create "$F" --nodes 2 >/dev/null || bad "create after destroy"
D=
for i in $(seq 12); do "$S" destroy "$F" >"$SMARTIO_RUNDIR/d$i.out" 2>&1 & D="$D $!"; done
for p in $D; do wait $p; done
out=$(cat "$SMARTIO_RUNDIR"/d*.out | grep -v "does not exist")
[ -z "$out" ] || bad "destroys at once failed otherwise than finding no fabric: $out"
grep -q "attached" "$SMARTIO_RUNDIR"/d*.out &&
	bad "a destroy named another destroy as attached: $(grep -h attached "$SMARTIO_RUNDIR"/d*.out | head -1)"
[ -d "$SMARTIO_RUNDIR/smartio-$F" ] && bad "destroys at the same time left the fabric"

# A fabric whose registry is gone: joining it and creating it agree that
# the name is taken, and say what removes what is left.
"$S" create "$F" --nodes 2 >/dev/null || bad "create after destroys"
rm "$SMARTIO_RUNDIR/smartio-$F/registry"
out=$("$S" status "$F" 2>&1) && bad "status of a fabric without a registry succeeds"
echo "$out" | grep -q "does not exist" && bad "a fabric without a registry is called non-existent: $out"
echo "$out" | grep -q "smartio destroy $F" || bad "status does not say what removes a half fabric: $out"
out=$("$S" create "$F" --nodes 2 2>&1) && bad "create over a half fabric succeeds"
echo "$out" | grep -q "smartio destroy $F" || bad "create does not say what removes a half fabric: $out"
"$S" destroy "$F" || bad "destroy of a fabric without a registry fails"
"$S" create "$F" --nodes 2 >/dev/null || bad "create after removing a half fabric fails"
"$S" destroy "$F" >/dev/null || bad "destroy"
[ $fails -eq 0 ] && echo "lifecycle: all passed"
exit $((fails != 0))
