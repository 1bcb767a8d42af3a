#!/bin/sh
# No private header is included outside its library: programs, examples,
# benchmarks and the other libraries use installed (public) headers only;
# white-box tests (tests/) may reach internals. What each object includes
# is read from the compiler's own dependency lists (ninja -t deps), so
# headers reached through -I and through other headers count too.
#   libsmartio       src/core/*.h, src/backend/**.h and sio_config.h
#   libsmartio-nvme  drivers/nvme/*.h
#   libsmartio-gpu   drivers/gpu/*.h (the library and its DMA plugin)
#   nvme-emu model   drivers/nvme/emu/emu_priv.h (emu.h is the model's interface)
# (src/support/*.h is shared by the libraries and the programs alike.)
# Usage: private-headers.sh BUILD_DIR SOURCE_DIR
set -eu
build=$(cd "$1" && pwd -P) src=$(cd "$2" && pwd -P)
out=$(ninja -C "$build" -t deps | awk -v build="$build" -v srcdir="$src" '
function normal(path,	n, i, k, part, stack, out) {	# an absolute path without . and ..
	n = split(path, part, "/")
	k = 0
	for (i = 1; i <= n; i++) {
		if (part[i] == "" || part[i] == ".")
			continue
		if (part[i] == "..") { if (k > 0) k--; continue }
		stack[++k] = part[i]
	}
	out = ""
	for (i = 1; i <= k; i++)
		out = out "/" stack[i]
	return out
}
function owner(path) {	# the library a header is private to, or ""
	if (path ~ /^drivers\/nvme\/emu\//)
		return path ~ /\/emu_priv\.h$/ ? "nvme-emu" : ""
	if (path ~ /^src\/(core|backend)\/.*\.h$/ || path == "src/sio_config.h")
		return "libsmartio"
	if (path ~ /^drivers\/nvme\/[^\/]*\.h$/)
		return "libsmartio-nvme"
	if (path ~ /^drivers\/gpu\/.*\.h$/)
		return "libsmartio-gpu"
	return ""
}
function target_lib(t) {	# the library a build target belongs to, or ""
	if (t == "src/libsmartio.a") return "libsmartio"
	if (t == "drivers/nvme/libsmartio-nvme.a") return "libsmartio-nvme"
	if (t ~ /^drivers\/gpu\/libsmartio-gpu(dma\.so|\.a)$/) return "libsmartio-gpu"
	if (t == "drivers/nvme/emu/libsio-nvme-emu.a") return "nvme-emu"
	return ""
}
/^[^ ].*: #deps/ {
	obj = $1; sub(/:$/, "", obj)
	target = obj; sub(/\.p\/.*/, "", target)
	src = ""
	next
}
/^    / {
	p = normal($1 ~ /^\// ? $1 : build "/" $1)
	if (p == build "/src/sio_config.h")
		p = "src/sio_config.h"		# generated into the build directory
	else if (index(p, srcdir "/") == 1 && index(p, build "/") != 1)
		p = substr(p, length(srcdir) + 2)
	else
		next				# a system header, or one generated
	if (src == "") { src = p; next }	# the first is the source itself
	if (target ~ /^tests\//)
		next
	lib = owner(p)
	if (lib != "" && lib != target_lib(target) && !seen[src " " p]++)
		printf "%s includes %s (private to %s)\n", src, p, lib
}')
if [ -n "$out" ]; then
	echo "$out" | sort
	echo "FAIL: private headers included outside their library: $(echo "$out" | wc -l)"
	echo "(use the public API, or move the code into the library that owns the header)"
	exit 1
fi
echo "no private header is included outside its library"
