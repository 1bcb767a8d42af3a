#!/bin/sh
# Instructions per I/O against the budget kept in the tree: callgrind's
# counts are deterministic for a given build, so this is a test where a
# timing could not be. The count is issue 27's measure: all that
# nvme-bench-overhead collects between its callgrind toggles, submit +
# complete (the calls and the benchmark loop's instructions between the
# toggles), the figure the table gives for e1d480b and main; the
# count inside the driver's calls is printed beside it. Fails when the
# count exceeds the budget by more than 10 %, or when the budget file does
# not say why it is what it is.
# usage: instructions.sh NVME_BENCH_OVERHEAD BUDGET_FILE OPTIMIZATION SANITIZE
set -u
bench=$1 budget_file=$2 opt=$3 san=$4
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

# The budget is for the build CI makes: optimized (the project's default,
# debugoptimized), no sanitizers, valgrind installed.
case $opt in 2|3) ;; *) skip "the budget holds for -O2 builds; this one is -O$opt (meson setup -Dbuildtype=debugoptimized)";; esac
[ "$san" = none ] || skip "a build with -Db_sanitize=$san counts the sanitizer's instructions too"
command -v valgrind >/dev/null || skip "valgrind is not installed (tools/install-deps.sh installs it)"

budget=$(sed -n 's/^budget \([0-9][0-9]*\)$/\1/p' "$budget_file")
[ -n "$budget" ] || fail "$budget_file has no 'budget N' line"
why=$(grep '^# [0-9][0-9]*:' "$budget_file" | tail -n 1)
[ "${why%%:*}" = "# $budget" ] ||
	fail "$budget_file: the last reason ('$why') is not for the budget in force ($budget): a budget raised says why, in the same commit"

out=$(mktemp -d "${TMPDIR:-/tmp}/sio-instr-$$.XXXXXX")
trap 'rm -rf "$out"' EXIT
"$bench" --instructions-only --quick -o "$out" >"$out/log" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "valgrind's headers" "$out/log"; then
	skip "nvme-bench-overhead was built without valgrind's headers"
fi
[ $rc -eq 0 ] || { cat "$out/log"; fail "nvme-bench-overhead --instructions-only failed ($rc)"; }
grep -A3 "^instructions per I/O" "$out/log"
counts=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print("%.1f %.1f" % (d["instructions_submit_with_loop"] + d["instructions_complete_with_loop"],
                     d["instructions_submit"] + d["instructions_complete"]))' "$out/overhead.json") ||
	fail "no instruction counts in $out/overhead.json"
count=${counts% *} inside=${counts#* }
limit=$(awk -v b="$budget" 'BEGIN { printf "%.1f", b * 1.10 }')
echo "submit + complete: $count instructions per I/O ($inside inside the driver's calls); budget $budget, failing above $limit"
if awk -v c="$count" -v l="$limit" 'BEGIN { exit !(c > l) }'; then
	fail "$count instructions per I/O is more than 10 % over the budget of $budget ($budget_file): make the hot path cheaper, or raise the budget there with a line saying why"
fi
if awk -v c="$count" -v b="$budget" 'BEGIN { exit !(c < 0.9 * b) }'; then
	echo "note: more than 10 % under the budget: lower it in $budget_file so that it keeps guarding"
fi
echo "ok"
