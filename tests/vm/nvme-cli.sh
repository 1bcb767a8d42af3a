#!/bin/sh
# SPDX-License-Identifier: MIT
# nvme-identify's JSON against nvme-cli's, on the same controller: QEMU's
# NVMe in the vm suite's guest, read by Debian's nvme-cli under the kernel's
# nvme driver and by nvme-identify on vfio (nvme-cli-suite.sh). Each key set
# of nvme-identify (id-ctrl and its psds, smart-log, error-log entries,
# fw-log, id-ns and its lbafs) must equal nvme-cli's; smartio's own keys
# are under "smartio". The features the kernel's driver leaves as they
# were must have the values nvme-cli read (Error Recovery, which is
# namespace-scoped, included).
# The guest also checks that `smartio vfio bind` refuses the controller
# while a filesystem on it is mounted, and a virtio disk by its class.
# Skipped (77) without nvme-cli, qemu or a kernel, as run-vm.sh says.
# usage: nvme-cli.sh BUILD_ROOT VM_DIR
set -u
# shellcheck source=lib/host.sh
. "$2/lib/host.sh"	# skip
nvme=$(command -v nvme || true)
[ -n "$nvme" ] || skip "nvme-cli is not installed (apt-get install nvme-cli)"
work=$(mktemp -d "${TMPDIR:-/tmp}/sio-vm-nvmecli.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A virtio disk beside the NVMe, for bind's class check; ext4 to mount one.
truncate -s 16M "$work/virtio.img"
SIO_VM_SUITE=$2/nvme-cli-suite.sh SIO_VM_EXTRA=$nvme SIO_VM_MODSETS=fs:ext4,virtio_blk \
SIO_VM_QEMU_ARGS='-drive file=$work/virtio.img,if=none,id=v0,format=raw -device virtio-blk-pci,drive=v0,addr=0xa' \
	"$2/run-vm.sh" "$1" "$2" "$work"
rc=$?
[ $rc -eq 0 ] || exit $rc
python3 - "$work/console.log" <<'PY'
import json, sys
docs, feat = {}, {}
for line in open(sys.argv[1], errors='replace'):
    if line.startswith('SIO-VM-JSON '):
        _, tool, cmd, text = line.rstrip('\n').split(' ', 3)
        docs[(tool, cmd)] = json.loads(text)
    if line.startswith('SIO-VM-SUM '):
        _, tool, cmd, v = line.split()
        docs[(tool, cmd)] = v
    if line.startswith('SIO-VM-FEAT nvme-cli '):
        _, _, fid, v = line.split()
        feat[int(fid)] = None if v == 'none' else int(v, 16)
fail = 0
def same(what, a, b, drop=()):
    global fail
    a, b = set(a) - set(drop), set(b)
    if a != b:
        print(f"FAIL: {what}: nvme-identify only {sorted(a - b)}, nvme-cli only {sorted(b - a)}")
        fail = 1
    else:
        print(f"{what}: the same {len(a)} keys as nvme-cli")
for cmd in ('id-ctrl', 'smart-log', 'error-log', 'fw-log', 'id-ns'):
    if ('smartio', cmd) not in docs or ('nvme-cli', cmd) not in docs:
        print(f"FAIL: {cmd}: missing from the guest's output"); fail = 1; continue
    s, n = docs[('smartio', cmd)], docs[('nvme-cli', cmd)]
    if cmd != 'fw-log':
        same(cmd, s.keys(), n.keys(), drop=('smartio',))
        for k in set(s) & set(n):	# numbers where nvme-cli has numbers, strings where strings
            if type(s[k]) != type(n[k]):
                print(f"FAIL: {cmd} {k}: nvme-identify {s[k]!r}, nvme-cli {n[k]!r}"); fail = 1
    if cmd == 'id-ctrl':
        same('id-ctrl psds', s['psds'][0].keys(), n['psds'][0].keys())
        for k in ('vid', 'ssvid', 'sn', 'mn', 'mdts', 'nn', 'sqes', 'cqes', 'oncs'):
            if s[k] != n[k]:
                print(f"FAIL: id-ctrl {k}: nvme-identify {s[k]!r}, nvme-cli {n[k]!r}"); fail = 1
    if cmd == 'id-ns':
        same('id-ns lbafs', s['lbafs'][0].keys(), n['lbafs'][0].keys())
        for k in ('nsze', 'ncap', 'nlbaf', 'flbas', 'eui64', 'nguid'):
            if s[k] != n[k]:
                print(f"FAIL: id-ns {k}: nvme-identify {s[k]!r}, nvme-cli {n[k]!r}"); fail = 1
    if cmd == 'error-log':
        same('error-log entry', s['errors'][0].keys(), n['errors'][0].keys())
    if cmd == 'fw-log':	# its one key names the device: nvme0 there, "device N" here
        fs, fn = next(iter(s.values())), next(iter(n.values()))
        same('fw-log slots', fs.keys(), fn.keys())
        if fs != fn:
            print(f"FAIL: fw-log: nvme-identify {fs}, nvme-cli {fn}"); fail = 1
# admin-passthru of Identify Controller: the same 4096 bytes either way
pt = (docs.get(('smartio', 'admin-passthru')), docs.get(('nvme-cli', 'admin-passthru')))
if None in pt or pt[0] != pt[1]:
    print(f"FAIL: admin-passthru Identify: md5 nvme-identify {pt[0]}, nvme-cli {pt[1]}"); fail = 1
else:
    print("admin-passthru: Identify Controller's 4096 bytes as nvme-cli's")
# Get Features: the kernel's driver sets Number of Queues and the
# Asynchronous Event Configuration, and the lender sets its own; the
# others must read the same through either.
got = {f['fid']: f.get('value') for f in docs.get(('smartio', 'get-feature'), {}).get('features', [])}
differ = [f for f in (1, 2, 4, 5, 6, 8, 10) if feat.get(f) is None or feat.get(f) != got.get(f)]
for f in differ:
    print(f"FAIL: get-feature 0x{f:02x}: nvme-identify {got.get(f)}, nvme-cli {feat.get(f)}")
    fail = 1
if not differ:
    print(f"get-feature: {len(got)} features read, the 7 compared have nvme-cli's values")
sys.exit(fail)
PY
