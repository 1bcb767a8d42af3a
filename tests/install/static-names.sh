#!/bin/sh
# SPDX-License-Identifier: MIT
# Every name libsmartio.a defines for other files starts with sio_ (public)
# or sio__ (internal, docs/architecture.md "Names"): the static archive is
# installed, and a program linked against it must meet no name it could
# have chosen itself (wf_init, reg_validate, ntb_open...).
# usage: static-names.sh ARCHIVE...
set -eu
bad=0
for a in "$@"; do
	names=$(nm -g --defined-only "$a" | awk '$2 ~ /^[TDBRCGSV]$/ { print $3 }' | sort -u)
	n=$(printf '%s\n' "$names" | grep -c . || true)
	other=$(printf '%s\n' "$names" | grep -v '^sio_' || true)
	if [ -n "$other" ]; then
		echo "$(basename "$a"): names outside sio_ and sio__:"
		printf '  %s\n' $other
		bad=1
	else
		echo "$(basename "$a"): $n names, each sio_ or sio__"
	fi
done
exit $bad
