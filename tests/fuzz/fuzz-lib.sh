# Sourced by the fuzz scripts.

# fuzz_build SRC BUILD TARGET: build one libFuzzer target with clang, ASan
# and UBSan, in a build directory of its own (set up on first use; the
# fuzz scripts share it).
fuzz_build() {
	fsrc=$1 fbuild=$2 target=$3
	if [ ! -f "$fbuild/build.ninja" ]; then
		CC=clang meson setup "$fbuild" "$fsrc" -Dfuzz=true -Dtests=disabled -Dcuda=disabled \
			-Dvm_tests=disabled -Db_sanitize=address,undefined -Db_lundef=false \
			-Dbuildtype=debugoptimized >"$fbuild.setup.log" 2>&1 ||
			{ cat "$fbuild.setup.log"; return 1; }
	fi
	ninja -C "$fbuild" "$target"
}

# fuzz_run NAME BINARY SECONDS CORPUS [libFuzzer options...]: run a
# libFuzzer binary for a fixed time, keep its chatter in a log, print the
# log's tail and fail on a crash. Inputs that once failed
# (tests/fuzz/regress/NAME/) are run first, and seed the corpus.
fuzz_run() {
	name=$1 bin=$2 secs=$3 corpus=$4
	shift 4
	log="$(dirname "$bin")/$name.log"
	regress="$(dirname "$0")/regress/$name"
	mkdir -p "$corpus"
	if [ -d "$regress" ] && [ -n "$(ls -A "$regress")" ]; then
		if ! ASAN_OPTIONS=detect_leaks=0 "$bin" "$@" "$regress"/* >"$log" 2>&1; then
			tail -n 60 "$log"
			echo "$name fuzz: an input of $regress fails again"
			return 1
		fi
		cp "$regress"/* "$corpus"/
	fi
	echo "fuzzing $name for $secs s (log: $log)"
	if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=0 \
		"$bin" -max_total_time="$secs" -print_final_stats=1 "$@" "$corpus" >"$log" 2>&1; then
		tail -n 60 "$log"
		echo "$name fuzz: FAILED"
		return 1
	fi
	grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$log" || true
	echo "$name fuzz: no crash"
}
