#!/bin/bash
# The systemd units (src/tools/systemd): `systemd-analyze verify` is clean
# for each, and under a real systemd they run: a fabric, nvme-emu and
# nvme-manager start as services, each active only once it serves
# (Type=notify: the device is registered, a client is served at once), and
# each stops cleanly on SIGTERM (exit status 0). This machine did not boot
# with systemd, so the test runs systemd's own user manager in a private
# mount namespace (where /run/systemd/system exists); where that cannot be
# done it says why and is skipped (77).
# Usage: systemd.sh BUILD_DIR PREFIX BINDIR LIBDIR
set -u
build=$1 prefix=$2 bindir=$3 libdir=$4
skip() { echo "skipped: $*"; exit 77; }
command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed (apt-get install systemd)"
[ -x /lib/systemd/systemd ] || skip "no /lib/systemd/systemd"
T=$(mktemp -d "${TMPDIR:-/tmp}/smartio-systemd.XXXXXX")
F=t-sd-$$
trap 'rm -rf "$T"' EXIT
meson install -C "$build" --destdir "$T/dest" --no-rebuild --quiet >"$T/log" 2>&1 ||
	{ cat "$T/log"; echo "FAIL: meson install"; exit 1; }
D=$T/dest
mkdir -p "$T/config/systemd/user" "$T/etc/smartio"
# The installed units, pointed at the staged install (and our config dir).
for u in "$D$prefix"/lib/systemd/system/*.service; do
	sed -e "s|$prefix/$bindir|$D$prefix/$bindir|g; s|$prefix/etc|$T/etc|g" \
	    -e "/^\[Service\]/a Environment=LD_LIBRARY_PATH=$D$prefix/$libdir SMARTIO_QUIET=1" \
	    "$u" >"$T/config/systemd/user/$(basename "$u")"
done
n=$(ls "$T/config/systemd/user" | wc -l)
[ "$n" -ge 4 ] || { echo "FAIL: only $n units installed"; exit 1; }
fail=0
for u in "$T"/config/systemd/user/*.service; do
	inst=$(basename "$u" | sed "s/@\.service/@$F.service/")
	cp "$u" "$T/$inst"
	if ! out=$(systemd-analyze verify --man=no "$T/$inst" 2>&1) || [ -n "$out" ]; then
		echo "FAIL: systemd-analyze verify $(basename "$u"): $out"
		fail=1
	fi
done
[ $fail -eq 0 ] || exit 1
echo "systemd-analyze verify: $n units clean"

# A real systemd: the user manager in a mount namespace of its own.
unshare --mount --propagation private true 2>/dev/null ||
	skip "no mount namespace here (unshare --mount: $(unshare --mount true 2>&1)); verify passed"
printf 'NVME_EMU_ARGS=--node 0 --backing ram:32M\n' >"$T/etc/smartio/nvme-emu-$F.conf"
printf 'SMARTIO_CREATE_ARGS=--nodes 3\n' >"$T/etc/smartio/fabric-$F.conf"
export T F D prefix bindir libdir
exec unshare --mount --propagation private bash -c '
set -u
mount -t tmpfs tmpfs /run/systemd 2>/dev/null || mkdir -p /run/systemd
mkdir -p /run/systemd/system
export XDG_RUNTIME_DIR=$T/run XDG_CONFIG_HOME=$T/config SMARTIO_QUIET=1
export LD_LIBRARY_PATH=$D$prefix/$libdir
mkdir -m 700 -p "$XDG_RUNTIME_DIR"
/lib/systemd/systemd --user >"$T/systemd.log" 2>&1 &
sd=$!
S=$D$prefix/$bindir/smartio
fail=0
bad() { echo "FAIL: $*"; fail=1; }
sc() { timeout 60 systemctl --user "$@"; }
for i in $(seq 100); do sc is-system-running >/dev/null 2>&1 && break; sleep 0.1; done
state=$(sc is-system-running 2>&1)
case $state in running|degraded) ;; *) kill $sd; echo "skipped: systemd --user did not come up ($state): $(tail -3 "$T/systemd.log")"; exit 77 ;; esac
echo "systemd $(systemctl --version | head -1 | cut -d" " -f2) user manager running"
sc start "smartio-fabric@$F.service" || bad "smartio-fabric@$F did not start"
sc start "nvme-emu@$F.service" || bad "nvme-emu@$F did not start: $(sc status nvme-emu@$F.service 2>&1 | tail -5)"
# active means ready: the device is registered already, no waiting
"$S" status "$F" --json | python3 -c "import json,sys; d=json.load(sys.stdin); assert len(d[\"devices\"]) == 1, d" ||
	bad "nvme-emu@$F is active but its device is not registered"
sc start "nvme-manager@$F.service" || bad "nvme-manager@$F did not start: $(sc status nvme-manager@$F.service 2>&1 | tail -5)"
"$D$prefix/$bindir/nvme-identify" --fabric "$F" --node 1 --json | python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"smartio\"][\"via\"] == \"through the manager\", d" ||
	bad "nvme-manager@$F is active but does not serve"
"$D$prefix/$bindir/nvme-client" --fabric "$F" --node 2 --ios 200 --qd 4 >/dev/null ||
	bad "a client of the services failed"
for u in nvme-manager nvme-emu; do
	sc stop "$u@$F.service"
	st=$(sc show -p ExecMainStatus --value "$u@$F.service")
	res=$(sc show -p Result --value "$u@$F.service")
	[ "$st" = 0 ] && [ "$res" = success ] || bad "$u@$F: stopped with status $st, result $res"
done
sc stop "smartio-fabric@$F.service"
"$S" list | grep -q "^$F " && bad "smartio-fabric@$F left the fabric behind"
sc exit >/dev/null 2>&1 || kill $sd
for i in $(seq 50); do kill -0 $sd 2>/dev/null || break; sleep 0.1; done
kill -9 $sd 2>/dev/null
[ $fail -eq 0 ] && echo "fabric, nvme-emu and nvme-manager started, served and stopped cleanly under systemd"
exit $fail
'
