#!/usr/bin/env bash
# server-first-paint.sh: the history server's target page with 30 days of
# a target's runs, opened in headless Chromium: the first contentful paint
# as the browser measures it.
#
# A real run of the leaky example (watch --once) is copied into a fresh
# store as a target's runs every 15 minutes for DAYS days (2,880 runs for
# 30) through the store's own Ingest (bench/cmd/fillstore); then
# BenchmarkServer_TargetPageFirstPaint (browsertests) opens the target page
# over the whole range ROUNDS times and prints the first contentful
# paint's median and maximum, the page's size and the dots drawn. The
# target: a median under 1 s. The script exits 1 when it is missed.
#
#   bench/server-first-paint.sh              # DAYS=30 ROUNDS=10
#   DAYS=7 bench/server-first-paint.sh
#
# Nothing is left behind: the store and binaries live in a temporary
# directory removed on exit, and the example is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."

days=${DAYS:-30}
rounds=${ROUNDS:-10}
work=$(mktemp -d "${TMPDIR:-/tmp}/server-first-paint.XXXXXX")
example=""
cleanup() {
	if [[ -n $example ]]; then kill "$example" 2>/dev/null || true; wait "$example" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/heapscope" ./cmd/heapscope
go build -o "$work/fillstore" ./bench/cmd/fillstore

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$work/heapscope" serve-example leaky --addr "127.0.0.1:$port" >/dev/null 2>&1 &
example=$!
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/debug/pprof/" >/dev/null && break; sleep 0.1; done
"$work/heapscope" watch "http://127.0.0.1:$port" --data "$work/one" --once --window 2s 2>/dev/null
run=$(ls -d "$work"/one/runs/*/* | head -1)

read -r target n secs < <("$work/fillstore" -run "$run" -store "$work/store" -days "$days")
echo "store: $n runs of $target over $days days, filled in ${secs}s ($(du -sh "$work/store" | cut -f1))"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

out=$(cd browsertests && HEAPSCOPE_BENCH_STORE="$work/store" go test -run '^$' -bench TargetPageFirstPaint -benchtime "${rounds}x" -count 1 .)
line=$(grep '^BenchmarkServer_TargetPageFirstPaint' <<<"$out")
metric() { awk -v m="$1" '{ for (i = 1; i < NF; i++) if ($(i + 1) == m) print $i }' <<<"$line"; }
p50=$(metric fcp-p50-ms) max=$(metric fcp-max-ms) kib=$(metric page-KiB) dots=$(metric dots)
printf 'first contentful paint over %s rounds: median %s ms, max %s ms; page %s KiB, %s dots\n' "$rounds" "$p50" "$max" "$kib" "$dots"
if awk -v p="$p50" 'BEGIN { exit !(p < 1000) }'; then
	echo "target met: median first paint under 1 s"
else
	echo "TARGET MISSED: median first paint ${p50} ms, want under 1000"
	exit 1
fi
