#!/bin/bash
# The Prometheus view of a running fabric: during an nvme-client run,
# `smartio nvme stats --prometheus`, `smartio status --prometheus` and
# `smartio exporter`'s /metrics pass `promtool check metrics` (the latency
# histogram included); then a real Prometheus on the loopback (its own
# config, data in a temporary directory, a free port) scrapes the exporter
# every second, and its HTTP API gives a non-zero rate of the client's I/O.
# Skipped (77) without Debian's prometheus (apt-get install prometheus, as
# tools/install-deps.sh does).
# Usage: prometheus.sh SMARTIO NVME-EMU NVME-MANAGER NVME-CLIENT
set -u
S=$1 EMU=$2 MGR=$3 CLIENT=$4
for t in promtool prometheus; do
	command -v $t >/dev/null || { echo "SKIP: $t is not installed (apt-get install prometheus)"; exit 77; }
done
export SMARTIO_QUIET=1
unset SMARTIO_NODE
F=t-prom-$$
T=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	"$S" destroy "$F" --force >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
check() {	# check NAME FILE: promtool's lint, and a sample of the family NAME
	promtool check metrics <"$2" >"$T/lint" 2>&1 || { cat "$T/lint"; fail "promtool: $2"; }
	grep -q "^$1[{ ]" "$2" || { cat "$2"; fail "no $1 in $2"; }
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

"$S" create "$F" --nodes 2 >/dev/null || fail "create"
timeout 60 "$EMU" --fabric "$F" --backing ram:16M --background >/dev/null || fail "nvme-emu"
timeout 60 "$MGR" --fabric "$F" --background --quiet 2>"$T/mgr.log" || { cat "$T/mgr.log"; fail "nvme-manager"; }
"$CLIENT" --fabric "$F" --node 1 --op read --random --qd 4 --time 120 --progress 0 \
	>/dev/null 2>"$T/client.err" &
pids="$pids $!"
"$S" exporter "$F" --listen 127.0.0.1:0 >"$T/exporter.out" 2>&1 &
pids="$pids $!"

# the exporter's address, and a second of I/O with its latency published
for _ in $(seq 60); do
	url=$(sed -n 's/^serving //p' "$T/exporter.out")
	[ -n "$url" ] && timeout 10 "$S" nvme stats "$F" --prometheus >"$T/stats.prom" &&
		grep -q '^smartio_nvme_latency_seconds_count' "$T/stats.prom" && break
	sleep 0.5
done
[ -n "$url" ] || { cat "$T/exporter.out"; fail "the exporter did not say where it listens"; }
check smartio_nvme_latency_seconds_bucket "$T/stats.prom"
check smartio_nvme_reads_total "$T/stats.prom"
timeout 10 "$S" status "$F" --prometheus >"$T/status.prom" || fail "smartio status --prometheus"
check smartio_windows_used "$T/status.prom"
python3 -c "import urllib.request, sys; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())" \
	"$url" >"$T/scrape.prom" || fail "GET $url"
check smartio_nvme_reads_total "$T/scrape.prom"
check smartio_device_borrowers "$T/scrape.prom"

# A real Prometheus, scraping every second.
pp=$(free_port)
target=${url#http://}
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: smartio
    static_configs:
      - targets: ['${target%/metrics}']
EOF
promtool check config "$T/prometheus.yml" >"$T/lint" 2>&1 || { cat "$T/lint" "$T/prometheus.yml"; fail "promtool check config"; }
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/data" \
	--web.listen-address="127.0.0.1:$pp" >"$T/prometheus.log" 2>&1 &
pids="$pids $!"
q='sum(rate(smartio_nvme_reads_total{fabric="'$F'"}[5s]))'
python3 - "http://127.0.0.1:$pp" "$q" >"$T/query" 2>&1 <<'PY'
import json, sys, time, urllib.parse, urllib.request
base, q = sys.argv[1], sys.argv[2]
last = None
for _ in range(90):	# until Prometheus has two scrapes with I/O between them
    try:
        url = base + '/api/v1/query?' + urllib.parse.urlencode({'query': q})
        r = json.load(urllib.request.urlopen(url, timeout=5))
        last = r
        res = r['data']['result']
        if res and float(res[0]['value'][1]) > 0:
            print(f"{q} = {res[0]['value'][1]}")
            sys.exit(0)
    except OSError as e:
        last = str(e)
    time.sleep(1)
print(f"no non-zero rate: {last}")
sys.exit(1)
PY
rc=$?
cat "$T/query"
if [ $rc -ne 0 ]; then
	tail -n 20 "$T/prometheus.log"
	fail "Prometheus saw no I/O rate"
fi
kill -0 "$(echo $pids | cut -d' ' -f1)" 2>/dev/null || { cat "$T/client.err"; fail "the client ended early"; }
echo "ok: promtool passes the three outputs; Prometheus's rate of reads is non-zero"
