#!/bin/sh
# Build smartio into BUILD_DIR (default: build) and run every test suite
# (unit, integration, vm, install). Meson options in $SMARTIO_MESON_ARGS
# (e.g. "-Dwerror=true -Dnvme=enabled") apply to a new build directory and
# are set on an existing one.
#
# Nothing is lost silently: a build directory configured while a dependency
# was missing is configured again (the dependency may have arrived since);
# a feature still missing then, or a test skipped for want of something
# tools/install-deps.sh installs, fails the run. Only what this machine
# cannot have (a GPU, for the CUDA parts) is skipped, said in one line.
# SMARTIO_ALLOW_SKIP=1 turns those failures into that line too.
set -e
cd "$(dirname "$0")/.."
b=${1:-build}
allow=${SMARTIO_ALLOW_SKIP:-0}

# The features meson's last configure said NO to, apart from those that are
# a choice (fuzz targets) or need hardware (CUDA): one a line.
missing_features() {
	awk '/^  Features$/ { f = 1; next } f && /^$/ { f = 0 } f' "$b/meson-logs/meson-log.txt" |
		grep ': NO$' | sed 's/^ *//; s/ *: NO$//' |
		grep -v -e '^fuzz targets$' -e '^GPU driver (CUDA)$' || true
}

# shellcheck disable=SC2086 # SMARTIO_MESON_ARGS is a list of options
if [ ! -f "$b/build.ninja" ]; then
	meson setup "$b" ${SMARTIO_MESON_ARGS:-} >/dev/null
elif [ -n "$(missing_features)" ] || [ -n "${SMARTIO_MESON_ARGS:-}" ]; then
	if [ -n "$(missing_features)" ]; then
		echo "run-tests: $b was configured without: $(missing_features | paste -sd, -);" \
			"configuring again, in case it has arrived"
	fi
	meson setup --reconfigure "$b" ${SMARTIO_MESON_ARGS:-} >/dev/null
fi
gone=$(missing_features | paste -sd, -)
if [ -n "$gone" ]; then
	echo "run-tests: built without: $gone (tools/install-deps.sh installs what they need;" \
		"meson-logs/meson-log.txt says what was not found)" >&2
	[ "$allow" = 1 ] || exit 1
fi
ninja -C "$b"
# vm-long: variants run by hand (meson test -C build --suite vm-long)
rc=0
meson test -C "$b" --print-errorlogs --num-processes 1 --no-suite vm-long || rc=$?
# Skips: a GPU (or a kernel feature) is this machine's lack; any other skip
# is for a dependency that tools/install-deps.sh installs, and fails the run.
python3 - "$b/meson-logs/testlog.json" "$allow" <<'EOF' || { [ "$rc" -ne 0 ] || rc=1; }
import json, re, sys
hw, dep = [], []
for line in open(sys.argv[1]):
    try:
        t = json.loads(line)
    except ValueError:
        continue
    if t.get('result') != 'SKIP':
        continue
    out = (t.get('stdout') or '') + (t.get('stderr') or '')
    name = t['name'].split(' / ')[-1]
    why = out.strip().splitlines()[-1] if out.strip() else 'no reason given'
    # what no package gives: a GPU, a kernel feature of the machine's own
    cannot = re.search(r'GPU|CUDA|NVIDIA|mount namespace|systemd --user', out)
    (hw if cannot else dep).append((name, why))
if hw:
    print('run-tests: skipped for what this machine cannot have: '
          + '; '.join(f'{n} ({w})' for n, w in hw))
for n, why in dep:
    print(f'run-tests: {n} skipped: {why}', file=sys.stderr)
if dep:
    print(f'run-tests: {len(dep)} test(s) skipped for something tools/install-deps.sh installs'
          + ('' if sys.argv[2] == '1' else ': a failure (SMARTIO_ALLOW_SKIP=1 allows it)'),
          file=sys.stderr)
    sys.exit(0 if sys.argv[2] == '1' else 1)
EOF
exit "$rc"
