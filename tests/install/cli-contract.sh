#!/bin/sh
# The command-line contract (src/tools/prog.h), for every installed program
# and every benchmark: --help prints a usage on stdout and exits 0,
# --version prints the project's version and exits 0, an unknown option
# exits 2 with a message naming it, and a runtime failure (a fabric that
# does not exist) exits 1.
# Each installed program also has a man page (docs/man/mkman.py makes them
# with python3 alone, so HAVE_MAN is true) and bash completion that offers
# its options.
# Usage: cli-contract.sh BUILD_DIR BINDIR MANDIR DATADIR HAVE_MAN VERSION [BENCHMARK...]
set -eu
build=$1 bindir=$2 mandir=$3 datadir=$4 have_man=$5 version=$6
shift 6
export SMARTIO_QUIET=1
unset SMARTIO_FABRIC SMARTIO_NODE
fail=0 n=0
bad() { echo "FAIL: $*"; fail=1; }

dest=$(mktemp -d "${TMPDIR:-/tmp}/smartio-cli.XXXXXX")
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$dest/log" 2>&1 ||
	{ cat "$dest/log"; echo "FAIL: meson install"; exit 1; }
export LD_LIBRARY_PATH="$(dirname "$(find "$dest" -name 'libsmartio.so*' | head -1)")"

# One program: the four promises. $1 the program, the rest: arguments that
# make it fail at run time (a fabric that does not exist).
check() {
	p=$1; shift
	name=$(basename "$p")
	n=$((n + 1))
	out=$(timeout 20 "$p" --help 2>/dev/null) || bad "$name --help exits $? (want 0)"
	echo "$out" | grep -qi "usage" || bad "$name --help prints no usage on stdout"
	out=$(timeout 20 "$p" --version 2>&1) || bad "$name --version exits $? (want 0)"
	echo "$out" | grep -q "$version" || bad "$name --version prints '$out', not $version"
	rc=0; err=$(timeout 20 "$p" --bogus-option 2>&1 >/dev/null) || rc=$?
	[ $rc -eq 2 ] || bad "$name --bogus-option exits $rc (want 2)"
	echo "$err" | grep -q -- "--bogus-option" || bad "$name --bogus-option: the message does not name it: $err"
	[ $# -eq 0 ] && return
	rc=0; err=$(timeout 30 "$p" "$@" 2>&1 >/dev/null) || rc=$?
	[ $rc -eq 1 ] || bad "$name $* exits $rc (want 1, a runtime failure): $err"
}

nofab=t-cli-no-such-fabric-$$
for p in "$dest$bindir"/*; do
	case $(basename "$p") in
	smartio) check "$p" status "$nofab" ;;
	smartio-nvme) check "$p" stats "$nofab" ;;
	smartio-ivshmem-server) check "$p" --socket "$dest/s" --shm "$dest/no-such-file" ;;
	nvme-mcast-identify|nvme-identify|nvme-manager|nvme-client|nvme-emu|edu-emu)
		check "$p" --fabric "$nofab" ;;
	*) check "$p" ;;
	esac
done
for p in "$@"; do
	case $(basename "$p") in
	emu-bench) check "$p" --fabric "$nofab" --reset ;;
	gpu-bench|nvme-bench-doorbells|wake-cost) check "$p" ;;	# no --fabric
	*) check "$p" --fabric "$nofab" ;;
	esac
done
# Man pages and completion, for each installed program.
for p in "$dest$bindir"/*; do
	name=$(basename "$p")
	if [ "$have_man" = true ]; then
		page=$dest$mandir/man1/$name.1
		[ -s "$page" ] || bad "no man page $mandir/man1/$name.1"
		[ -s "$page" ] && ! grep -q -e '--version' -e '\\-\\-version' "$page" && bad "$name.1 does not list --version"
	fi
	comp=$dest$datadir/bash-completion/completions/$name
	[ -s "$comp" ] || { bad "no bash completion for $name"; continue; }
	got=$(PATH=$dest$bindir:$PATH bash -c '. "$1"; COMP_WORDS=("$2" --versi); COMP_CWORD=1;
		_smartio_complete; echo "${COMPREPLY[*]}"' _ "$comp" "$name")
	[ "$got" = --version ] || bad "bash completion of '$name --versi' gives '$got', not --version"
done
got=$(PATH=$dest$bindir:$PATH bash -c '. "$1"; COMP_WORDS=(smartio sta); COMP_CWORD=1;
	_smartio_complete; echo "${COMPREPLY[*]}"' _ "$dest$datadir/bash-completion/completions/smartio")
[ "$got" = status ] || bad "bash completion of 'smartio sta' gives '$got', not status"
# Sub-commands keep it too.
S=$dest$bindir/smartio
for c in create destroy list status path link; do
	timeout 10 "$S" $c --help >/dev/null 2>&1 || bad "smartio $c --help exits non-zero"
	rc=0; timeout 10 "$S" $c --bogus-option >/dev/null 2>&1 || rc=$?
	[ $rc -eq 2 ] || bad "smartio $c --bogus-option exits $rc (want 2)"
done
rc=0; "$S" frobnicate >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || bad "smartio frobnicate (no such command) exits $rc (want 2)"
# A command of another part is its program beside smartio (smartio-nvme for
# `smartio nvme` and `smartio top`), found there with no build tree on PATH.
if [ -x "$dest$bindir/smartio-nvme" ]; then
	rc=0; err=$(PATH=/usr/bin:/bin timeout 10 "$S" nvme stats "$nofab" 2>&1 >/dev/null) || rc=$?
	[ $rc -eq 1 ] && echo "$err" | grep -q "$nofab" ||
		bad "smartio nvme stats $nofab exits $rc (want 1, from smartio-nvme): $err"
	PATH=/usr/bin:/bin timeout 10 "$S" nvme --help 2>/dev/null | grep -q "smartio nvme stats" ||
		bad "smartio nvme --help prints no usage of smartio nvme stats"
	rc=0; PATH=/usr/bin:/bin timeout 10 "$S" top --bogus-option >/dev/null 2>&1 || rc=$?
	[ $rc -eq 2 ] || bad "smartio top --bogus-option exits $rc (want 2)"
fi
[ $fail -eq 0 ] || exit 1
echo "$n programs keep the command-line contract"
