#!/bin/sh
# Every path that the README's "Layout" block names exists in the tree, and
# every top-level folder of the tree that holds code is named there: the map
# and the tree cannot drift apart. Nothing in src/ uses a driver, as the note
# under the map says. Usage: readme-layout.sh SOURCE_DIR
set -eu
src=$1
block=$(awk '/^## Layout$/ { inl = 1; next }
	inl && /^```/ { if (open) exit; open = 1; next }
	open { print }' "$src/README.md")
[ -n "$block" ] || { echo "README.md has no Layout block (## Layout, then a fenced block)"; exit 1; }
bad=0 n=0
# The first word of a line is a path when it has a slash in it.
for p in $(printf '%s\n' "$block" | awk '$1 ~ /\// { print $1 }'); do
	n=$((n + 1))
	case $p in
	*/) [ -d "$src/$p" ] || { echo "README Layout names $p, which is not a folder of the tree"; bad=1; } ;;
	*) [ -e "$src/$p" ] || { echo "README Layout names $p, which is not in the tree"; bad=1; } ;;
	esac
done
# And the other way: each top-level folder with sources in it is on the map.
for d in "$src"/*/; do
	d=${d#"$src"/}
	case $d in build*/ | subprojects/) continue ;; esac
	git -C "$src" ls-files --error-unmatch "$d" >/dev/null 2>&1 || continue	# untracked
	printf '%s\n' "$block" | awk '{ print $1 }' | grep -q "^$d" ||
		{ echo "the tree has $d, which README's Layout does not name"; bad=1; }
done
# And the layering the note under the map states: nothing in src/ uses a
# driver, neither a meson dependency of one nor a header of its API.
uses=$({ grep -rnE 'smartio_(nvme|gpu)|nvme_[a-z_]*(dep|lib|exe|tool)\b|libsmartio_(nvme|gpu)|drivers/' \
		"$src/src" --include=meson.build
	grep -rnE '#include [<"]smartio/(nvme|gpu)[./]' "$src/src" --include='*.[ch]'; } || true)
[ -z "$uses" ] || { echo "src/ uses a driver (README: nothing in src/ uses a driver):"; echo "$uses"; bad=1; }
[ "$bad" = 0 ] || exit 1
echo "README Layout: $n paths, each in the tree; every top-level folder named; src/ uses no driver"
