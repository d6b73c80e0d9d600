#!/usr/bin/env bash
# watch-overhead.sh: what watch's captures cost the service they watch.
#
# Runs the optimized cache example under a constant open-model load twice
# over the same time: alone, then watched by `heapscope watch` at a short
# cadence (a 5 s window every 10 s, so that enough captures rise above the
# noise). From the service's own CPU time (/proc/PID/stat) and the load's
# latency it reports:
#   - CPU-seconds one capture costs the service, and the p99 latency with
#     and without captures;
#   - extrapolated to the default cadence (a 30 s window every 15 minutes),
#     the share of the service's CPU that watching takes (goal: below 1 %):
#     as measured (a capture's cost is mostly its forced collections and
#     profile encoding, whatever the window), and as an upper bound that
#     scales the whole cost with the window's length.
#
#   RATE=500 SECONDS_EACH=90 EVERY=10s WINDOW=5s bench/watch-overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${RATE:-500}
secs=${SECONDS_EACH:-90}
every=${EVERY:-10s}
window=${WINDOW:-5s}
work=$(mktemp -d)
svc= watch=
cleanup() {
	[ -n "$watch" ] && kill "$watch" 2>/dev/null || true
	[ -n "$svc" ] && kill "$svc" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/heapscope" ./cmd/heapscope
echo "machine: $(nproc) CPUs; $(go version); load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/heapscope" serve-example optimized --addr 127.0.0.1:0 2>"$work/svc.log" &
svc=$!
for _ in $(seq 100); do grep -q listening "$work/svc.log" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$work/svc.log" | head -1)

# cpu prints the service's user + system CPU time in seconds.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$svc/stat"; }

# phase runs the load for $secs seconds and prints "cpu_seconds p99_seconds".
phase() {
	local before after
	before=$(cpu)
	"$work/heapscope" load "$url/process?id=user-{rand:100000}" --rate "$rate" --duration "${secs}s" --format json >"$work/load.json" 2>/dev/null
	after=$(cpu)
	python3 - "$before" "$after" "$work/load.json" <<'PY'
import json, sys
before, after, path = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
d = json.load(open(path))
lat = d["latency_seconds"]
p99 = lat.get("p99", lat.get("99")) if isinstance(lat, dict) else None
print(f"{after - before:.3f} {p99}")
PY
}

# Warm the service up, then measure it alone.
"$work/heapscope" load "$url/process?id=user-{rand:100000}" --rate "$rate" --duration 10s >/dev/null 2>&1
read -r cpu_alone p99_alone < <(phase)

"$work/heapscope" watch "$url" --data "$work/data" --every "$every" --window "$window" 2>"$work/watch.log" &
watch=$!
read -r cpu_watched p99_watched < <(phase)
kill -TERM "$watch"; wait "$watch" || true; watch=
captures=$(grep -c 'msg=captured' "$work/watch.log" || true)

python3 - "$secs" "$cpu_alone" "$p99_alone" "$cpu_watched" "$p99_watched" "$captures" "$window" <<'PY'
import sys
secs, cpu_a, p99_a, cpu_w, p99_w, n = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5], int(sys.argv[6])
window = float(sys.argv[7].rstrip("s"))
print(f"service alone:   {cpu_a:.2f} CPU-s over {secs:.0f} s ({cpu_a / secs * 100:.1f} % of a CPU), p99 {float(p99_a) * 1000:.2f} ms")
print(f"service watched: {cpu_w:.2f} CPU-s over {secs:.0f} s, {n} captures of {window:g} s, p99 {float(p99_w) * 1000:.2f} ms")
if n:
    per = (cpu_w - cpu_a) / n
    budget = cpu_a / secs * 900  # the service's CPU-s in 15 minutes
    print(f"one capture costs the service {per:.3f} CPU-s (negative: below the noise)")
    print(f"at one 30 s capture every 15 min: {max(per, 0) / budget * 100:.2f} % of its CPU as measured, "
          f"at most {max(per, 0) * 30 / window / budget * 100:.2f} % scaled by the window (goal: below 1 %)")
PY
