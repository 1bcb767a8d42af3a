#!/bin/bash
# Every program has a manual page with the sections a reader looks for:
# each installed program (meson's install plan), each benchmark built under
# build/bench, and the fio engine when it is built; smartio's subcommands
# each answer --help. Usage: man-pages.sh BUILD_ROOT
set -u
B=$1
M=$B/docs/man
fail=0 pages=0
sections=("NAME" "SYNOPSIS" "DESCRIPTION" "OPTIONS" "ENVIRONMENT" "EXIT STATUS" "EXAMPLES"
	  "SEE ALSO")

check_page() {	# check_page PAGE WHAT
	local s
	if [ ! -s "$1" ]; then
		echo "FAIL: $2 has no manual page ($1)"
		fail=$((fail + 1))
		return
	fi
	for s in "${sections[@]}"; do
		if ! grep -qx "\.SH $s" "$1"; then
			echo "FAIL: $1 has no $s section"
			fail=$((fail + 1))
		fi
	done
	pages=$((pages + 1))
}

# installed programs: what meson installs into a bin directory
progs=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for src, dst in d.items():
    if "/bin/" in dst:
        print(dst.rsplit("/", 1)[1])' "$B/meson-info/intro-installed.json")
[ -n "$progs" ] || { echo "FAIL: no installed program found in meson's plan"; exit 1; }
for p in $progs; do
	check_page "$M/man1/$p.1" "$p"
done
# benchmarks: every executable program built under bench/
while IFS= read -r f; do
	check_page "$M/man1/$(basename "$f").1" "benchmark $(basename "$f")"
done < <(find "$B/bench" -type f -perm -u+x ! -name '*.so' ! -name '*.a' ! -path '*.p/*')
if [ -e "$B/bench/fio/fio-smartio.so" ]; then
	check_page "$M/man7/fio-smartio.7" "the fio engine"
fi

# smartio's subcommands answer --help (smartio-nvme found as under devenv)
export PATH=$B/drivers/nvme/tools:$PATH
for c in create destroy list status path link top nvme vfio uio ntb; do
	if ! out=$("$B/src/tools/smartio" "$c" --help 2>&1) || [ -z "$out" ]; then
		case "$out" in *"unknown command '$c'"*) continue ;; esac	# not built here
		echo "FAIL: smartio $c --help: $out"
		fail=$((fail + 1))
	fi
done
for c in "vfio lend" "uio lend"; do	# a subcommand's subcommand too, where built
	# shellcheck disable=SC2086 # two words
	out=$("$B/src/tools/smartio" $c --help 2>&1) && continue
	case "$out" in *"unknown command"*) continue ;; esac
	echo "FAIL: smartio $c --help: $out"
	fail=$((fail + 1))
done
# smartio.1 lists its subcommands one to an entry
if [ -e "$M/man1/smartio.1" ] && [ "$(grep -c '^\.B \(create\|destroy\|list\|status\|path\|link\|top\) ' "$M/man1/smartio.1")" -lt 7 ]; then
	echo "FAIL: smartio.1 does not list create, destroy, list, status, path, link and top apart"
	fail=$((fail + 1))
fi
echo "man pages: $pages checked, $fail failure(s)"
[ "$fail" -eq 0 ]
