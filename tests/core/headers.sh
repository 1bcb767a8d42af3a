#!/bin/sh
# Compile every public header on its own, as C and as C++.
set -e
src=$1; cc=${CC:-cc}; cxx=${CXX:-c++}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0
for h in $(cd "$src/include" && find smartio -name '*.h' | sort); do
	printf '#include <%s>\nint main(void) { return 0; }\n' "$h" > "$tmp/t.c"
	$cc -std=c11 -Wall -Wextra -Werror -I"$src/include" -c "$tmp/t.c" -o "$tmp/t.o" || { echo "FAIL C: $h"; exit 1; }
	cp "$tmp/t.c" "$tmp/t.cpp"
	$cxx -std=c++17 -Wall -Werror -I"$src/include" -c "$tmp/t.cpp" -o "$tmp/t.o" || { echo "FAIL C++: $h"; exit 1; }
	n=$((n + 1))
done
echo "$n headers compile alone in C and C++"
