#!/bin/sh
# Compile every public header on its own, as C and as C++; the device-side
# CUDA headers (*.cuh) too, where only their layouts are seen, and with nvcc
# when it is on PATH (or $NVCC names it), device functions and all.
set -e
src=$1; cc=${CC:-cc}; cxx=${CXX:-c++}
nvcc=${NVCC:-$(command -v nvcc || true)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0
for h in $(cd "$src/include" && find smartio -name '*.h' -o -name '*.cuh' | sort); do
	printf '#include <%s>\nint main(void) { return 0; }\n' "$h" > "$tmp/t.c"
	$cc -std=c11 -Wall -Wextra -Werror -I"$src/include" -c "$tmp/t.c" -o "$tmp/t.o" || { echo "FAIL C: $h"; exit 1; }
	cp "$tmp/t.c" "$tmp/t.cpp"
	$cxx -std=c++17 -Wall -Werror -I"$src/include" -c "$tmp/t.cpp" -o "$tmp/t.o" || { echo "FAIL C++: $h"; exit 1; }
	case $h in
	*.cuh)	if [ -n "$nvcc" ]; then
			cp "$tmp/t.c" "$tmp/t.cu"
			"$nvcc" -std=c++17 -Xcompiler -Wall,-Werror -I"$src/include" -c "$tmp/t.cu" -o "$tmp/t.o" ||
				{ echo "FAIL CUDA: $h"; exit 1; }
		else
			echo "$h: no nvcc, its device functions not compiled"
		fi ;;
	esac
	n=$((n + 1))
done
echo "$n headers compile alone in C and C++"
