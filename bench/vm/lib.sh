# SPDX-License-Identifier: MIT
# shellcheck shell=sh disable=SC2154 # prog: the benchmark's
# What the vm benchmarks (bench/vm/*.sh) share, sourced by each: where the
# tree is, their arguments, their skips, the console less the results, and
# the PNG. A benchmark sets prog (its name, for messages) and the defaults
# of what it takes before bench_args: rt, out, and rounds or smoke where it
# takes -r or --smoke.
# shellcheck disable=SC2034 # here, src, build, fio, engine: the benchmarks'
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }

bench_bad() {
	echo "$prog: unknown argument '$1' (see the usage: $(sed -n 's/^# usage: [^ ]* BUILD_DIR //p' "$0"))" >&2
	exit 2
}
# bench_args BUILD_DIR [-t SECONDS] [-r ROUNDS] [-o DIR] [--smoke] [--window]:
# build, rt, rounds, out, smoke (which --smoke sets, with 1 s runs), window
# (1 with --window); each of the last three only where the benchmark set it
# before
bench_args() {
	[ $# -ge 1 ] || { sed -n 's/^# usage: //p' "$0"; exit 2; }
	build=$(cd "$1" && pwd)
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		-t) rt=$2; shift ;;
		-r) [ -n "${rounds:-}" ] || bench_bad "$1"; rounds=$2; shift ;;
		-o) out=$2; shift ;;
		--smoke) [ -n "${smoke:-}" ] || bench_bad "$1"; smoke=1 rt=1 ;;
		--window) [ -n "${window:-}" ] || bench_bad "$1"; window=1 ;;
		*) bench_bad "$1" ;;
		esac
		shift
	done
	case $rt in ''|*[!0-9]*) echo "$prog: -t takes whole seconds, not '$rt'" >&2; exit 2 ;; esac
	case ${rounds-1} in ''|*[!0-9]*) echo "$prog: -r takes a whole number of rounds, not '$rounds'" >&2; exit 2 ;; esac
}
# bench_fio: fio and the smartio engine (fio, engine), or a skip
bench_fio() {
	fio=$(command -v fio || true)
	[ -n "$fio" ] || skip "fio not installed (apt-get install fio)"
	engine=$build/bench/fio/fio-smartio.so
	[ -f "$engine" ] || skip "$engine not built (see docs/fio.md: it needs the fio source)"
}
# bench_console LOG: the run's log less the results (JSON between the
# SIO-BENCH-BEGIN and END markers)
bench_console() {
	awk '/^SIO-BENCH-BEGIN/ {skip = 1} !skip && !/^SIO-BENCH-/ {print} /^SIO-BENCH-END/ {skip = 0}' "$1"
}
# bench_work NAME: a work directory (work), removed at the exit unless kept
bench_work() {
	work=$(mktemp -d "${TMPDIR:-/tmp}/sio-$1.XXXXXX")
	trap 'rm -rf "$work"' EXIT
}
# keep: the work directory stays, with the guests' consoles (a failure's)
keep() { trap - EXIT; echo "$prog: the guests' consoles are in $work"; }
# bench_guests RUNNER: the guests, tests/vm/RUNNER (run-vm.sh, run-ntb.sh)
# with the knobs the caller exported, their log in $work/run.log; prints
# it less the results. Exits 77 where they were skipped; where they failed,
# with their status under --smoke, else 1, the consoles kept.
bench_guests() {
	set +e
	"$src/tests/vm/$1" "$build" "$src/tests/vm" "$work" >"$work/run.log" 2>&1
	rc=$?
	set -e
	bench_console "$work/run.log"
	[ $rc -ne 77 ] || exit 77
	[ $rc -eq 0 ] || [ "${smoke:-0}" = 0 ] || exit $rc
	[ $rc -eq 0 ] || { echo "$prog: the guests' run failed (exit $rc)"; keep; exit 1; }
}
# bench_png NAME: $out/NAME.png from $out/NAME.gp, after the charts' common
# style (histograms.gp), where gnuplot is installed
bench_png() {
	if command -v gnuplot >/dev/null 2>&1; then
		(cd "$out" && gnuplot "$here/histograms.gp" "$1.gp") && echo "wrote $out/$1.json, $1.png"
	else
		echo "wrote $out/$1.json (gnuplot not installed: no PNG)"
	fi
}
