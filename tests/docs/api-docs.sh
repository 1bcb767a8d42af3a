#!/bin/sh
# The API reference builds from the headers' kernel-doc with no warning
# (what `ninja -C build docs` runs, into a scratch directory). Skipped,
# saying why, without Sphinx or the kernel's scripts/kernel-doc.
# Usage: api-docs.sh SOURCE_DIR SPHINX_BUILD KERNEL_DOC (either may be "")
set -eu
src=$1 sphinx=$2 kdoc=$3
[ -n "$sphinx" ] || { echo "skipped: no sphinx-build (apt-get install python3-sphinx)"; exit 77; }
[ -n "$kdoc" ] || { echo "skipped: no kernel-doc (apt-get install linux-kbuild-6.1)"; exit 77; }
out=$(mktemp -d "${TMPDIR:-/tmp}/smartio-api.XXXXXX")
trap 'rm -rf "$out"' EXIT
"$sphinx" -q -E -W --keep-going -b html -d "$out/doctrees" -D "kerneldoc_bin=$kdoc" \
	-D "kerneldoc_srctree=$src" "$src/docs/api" "$out/html"
n=$(grep -c 'class="sig-name descname"' "$out"/html/*.html | awk -F: '{ n += $2 } END { print n }')
[ "$n" -gt 100 ] || { echo "FAIL: the reference declares only $n functions, structs and macros"; exit 1; }
echo "API reference: $n declarations rendered, no warning"
