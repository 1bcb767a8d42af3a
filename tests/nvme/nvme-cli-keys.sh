#!/bin/bash
# nvme-identify's JSON has the keys of nvme-cli's `-o json` output: id-ctrl
# (with its psds), smart-log, error-log and fw-log, against the key lists of
# nvme-cli 2.3 and 2.4 in nvme-cli-keys.txt (taken from nvme-cli's printing code:
# this machine has no NVMe for nvme-cli itself to read). Each key nvme-cli
# always prints must be there, and no key nvme-cli never prints; smartio's
# own are under "smartio"; id-ns (--namespace 1) too. Also: --raw gives the
# structure's bytes, and Get Features of Error Recovery, a namespace-scoped
# feature, sends the namespace (the controller refuses NSID 0).
# Usage: nvme-cli-keys.sh SMARTIO NVME-EMU NVME-IDENTIFY KEYS-FILE
set -u
S=$1 EMU=$2 ID=$3 KEYS=$4
export SMARTIO_QUIET=1
unset SMARTIO_NODE
F=t-nvmecli-$$
T=$(mktemp -d)
trap '"$S" destroy "$F" --force >/dev/null 2>&1; rm -rf "$T"' EXIT
"$S" create "$F" --nodes 2 >/dev/null || { echo "FAIL: create"; exit 1; }
timeout 60 "$EMU" --fabric "$F" --backing ram:16M --background >/dev/null || { echo "FAIL: nvme-emu"; exit 1; }
for what in id-ctrl smart-log error-log fw-log; do
	case $what in
	id-ctrl) args= ;; smart-log) args="--log smart" ;; error-log) args="--log error" ;; fw-log) args="--log fw" ;;
	esac
	timeout 60 "$ID" --fabric "$F" --json $args >"$T/$what.json" || { echo "FAIL: nvme-identify $args"; exit 1; }
done
timeout 60 "$ID" --fabric "$F" --json --namespace 1 >"$T/id-ns.json" || { echo "FAIL: nvme-identify --namespace 1"; exit 1; }
timeout 60 "$ID" --fabric "$F" --features -H >"$T/feat.txt" || { echo "FAIL: nvme-identify --features -H"; exit 1; }
if ! grep -q '^  0x05 error_recovery  *0x' "$T/feat.txt" || ! grep -q 'TLER' "$T/feat.txt"; then
	echo "FAIL: Get Features 0x05 (namespace-scoped) or its -H decoding:"; cat "$T/feat.txt"; exit 1
fi
timeout 60 "$ID" --fabric "$F" --admin-passthru --opcode 0x06 --cdw10 1 --data-len 4096 \
	--read -b >"$T/pt.bin" || { echo "FAIL: nvme-identify --admin-passthru (Identify)"; exit 1; }
timeout 60 "$ID" --fabric "$F" --raw >"$T/id.bin" || { echo "FAIL: nvme-identify --raw"; exit 1; }
timeout 60 "$ID" --fabric "$F" --log smart -b >"$T/smart.bin" || { echo "FAIL: nvme-identify --log smart -b"; exit 1; }
python3 - "$KEYS" "$T" <<'PY'
import json, re, sys
keys, tmp = sys.argv[1], sys.argv[2]
want = {}
for line in open(keys):
    if line.startswith('#') or ':' not in line:
        continue
    name, rest = line.split(':', 1)
    sep = '|' if '|' in rest else None
    want[name.strip()] = [k.strip() for k in (rest.split('|') if sep else rest.split()) if k.strip()]

def split(spec):
    need, may = set(), []
    for k in spec:
        if k.startswith('['):
            may.append(re.sub(r'\[(.*?)(\d+)\.\.(\d+)\]', lambda m: m.group(1) + '(' + '|'.join(
                str(i) for i in range(int(m.group(2)), int(m.group(3)) + 1)) + ')', k).strip('[]'))
        else:
            need.add(k)
    return need, may

fail = 0
def check(what, have, spec, extra=()):
    global fail
    need, may = split(spec)
    have = set(have) - set(extra)
    missing = need - have
    stray = [k for k in have - need if not any(re.fullmatch(m, k) for m in may)]
    if missing or stray:
        print(f"FAIL: {what}: missing {sorted(missing)}, not in nvme-cli's {sorted(stray)}")
        fail = 1
    else:
        print(f"{what}: the {len(have)} keys nvme-cli 2.4 prints")

d = json.load(open(f'{tmp}/id-ctrl.json'))
check('id-ctrl', d.keys(), want['id-ctrl'], extra=('smartio',))
for p in d['psds']:
    check('id-ctrl psds', p.keys(), want['id-ctrl.psds'])
assert d['smartio']['via'], d
check('smart-log', json.load(open(f'{tmp}/smart-log.json')).keys(), want['smart-log'])
e = json.load(open(f'{tmp}/error-log.json'))
check('error-log', e.keys(), want['error-log'])
for x in e['errors']:
    check('error-log entry', x.keys(), want['error-log.errors'])
n = json.load(open(f'{tmp}/id-ns.json'))
check('id-ns', n.keys(), want['id-ns'])
for x in n['lbafs']:
    check('id-ns lbafs', x.keys(), want['id-ns.lbafs'])
fw = json.load(open(f'{tmp}/fw-log.json'))
(dev, slots), = fw.items()
check('fw-log', slots.keys(), want['fw-log.DEVICE'])
# the raw structures: Identify Controller is 4096 bytes, and its model
# number (bytes 24..63) is the JSON's mn; the SMART log is 512
raw = open(f'{tmp}/id.bin', 'rb').read()
if len(raw) != 4096 or raw[24:64].decode().rstrip('\0') != d['mn']:
    print(f"FAIL: --raw: {len(raw)} bytes, model {raw[24:64]!r}, not {d['mn']!r}"); fail = 1
if open(f'{tmp}/pt.bin', 'rb').read() != raw:
    print("FAIL: --admin-passthru's Identify (CNS 1) is not --raw's Identify Controller"); fail = 1
if len(open(f'{tmp}/smart.bin', 'rb').read()) != 512:
    print("FAIL: --log smart -b is not 512 bytes"); fail = 1
sys.exit(fail)
PY
