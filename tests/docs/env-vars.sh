#!/bin/sh
# docs/env.md lists every SMARTIO_* variable the sources read, and no other:
# a variable is one that a C source reads with getenv() or that a script,
# unit or meson file names (header guards, SMARTIO_*_H, are not variables).
# Usage: env-vars.sh SOURCE_DIR
set -eu
src=$1
cd "$src"
used=$(grep -rhoE 'SMARTIO_[A-Z0-9_]+' src drivers examples bench tools tests include kernel \
	--include='*.c' --include='*.h' --include='*.cu' --include='*.sh' --include='*.in' \
	--include='meson.build' | grep -v '_H$' | sort -u)
documented=$(grep -oE '`SMARTIO_[A-Z0-9_]+`' docs/env.md | tr -d '`' | sort -u)
fail=0
for v in $used; do
	echo "$documented" | grep -qx "$v" || { echo "FAIL: $v is read but docs/env.md does not list it"; fail=1; }
done
for v in $documented; do
	echo "$used" | grep -qx "$v" || { echo "FAIL: docs/env.md lists $v, which nothing reads"; fail=1; }
done
[ $fail -eq 0 ] && echo "docs/env.md lists the $(echo "$used" | wc -l) SMARTIO_* variables the sources read"
exit $fail
