#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/check-commits.py takes the messages CONTRIBUTING.md asks for and
# refuses each kind of message it does not: a test of the checker itself
# (CI runs the checker over the history since .ci/commit-style-base).
set -u
check=$1/tools/check-commits.py
t=$(mktemp -d "${TMPDIR:-/tmp}/sio-commit.XXXXXX")
trap 'rm -rf "$t"' EXIT
fail=0
# want 0|1 NAME: the message in $t/msg passes (0) or is refused (1).
want() {
	python3 "$check" --message "$t/msg" >"$t/out" 2>&1
	rc=$?
	if [ "$rc" != "$1" ]; then
		echo "FAIL: $2: exit $rc, want $1"; sed 's/^/  | /' "$t/out"; fail=1
	else
		echo "ok: $2"
	fi
}
printf 'winfab: judge a reused slot by its new owner\n\nA young process showed the count its predecessor was last seen with.\n' >"$t/msg"
want 0 "a good message"
printf 'winfab: judge a reused slot\n\nWhy.\n    ninja -C build && meson test -C build shmwin --print-errorlogs --num-processes 1\n' >"$t/msg"
want 0 "an indented command line may be long"
printf '# a comment git shows in the editor\nntb: add a window\n\nWhy.\n' >"$t/msg"
want 0 "comment lines are not the message"
printf 'winfab: a reused slot is judged by its new owner and not by the old one at all\n\nWhy.\n' >"$t/msg"
want 1 "a subject over 72 characters"
printf 'judge a reused slot by its new owner\n\nWhy.\n' >"$t/msg"
want 1 "a subject without its part"
printf 'winfab: judged a reused slot by its owner\n\nWhy.\n' >"$t/msg"
want 1 "a past tense"
printf 'winfab: judging a reused slot by its owner\n\nWhy.\n' >"$t/msg"
want 1 "a gerund"
printf 'winfab: judge a reused slot by its owner.\n\nWhy.\n' >"$t/msg"
want 1 "a period at the end"
printf 'winfab: judge a reused slot by its owner\n' >"$t/msg"
want 1 "no body"
printf 'winfab: judge a reused slot by its owner\nWhy.\n' >"$t/msg"
want 1 "no blank second line"
printf 'winfab: judge a reused slot by its owner\n\nA young process showed the very count its predecessor was last seen with, so.\n' >"$t/msg"
want 1 "a body line over 72 columns"
[ $fail = 0 ] && echo "commit-style: the checker takes and refuses what CONTRIBUTING.md says"
exit $fail
