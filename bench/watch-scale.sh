#!/usr/bin/env bash
# watch-scale.sh: one watcher, many targets, on this machine.
#
# Starts pprofleet's N small pprof servers on 127.0.0.1 (500 by default),
# each serving profiles recorded from a real Go runtime, and watches them
# through file_sd at a cadence of EVERY (1m by default) with a 10 s window
# and CONCURRENCY captures at once (256 by default) for MINUTES minutes (4
# by default). Then it reports:
#   - slots due and captured, missed slots and the schedule lag (watch's own
#     /metrics: heapscope_watch_schedule_lag_seconds, _missed_slots_total);
#   - watch's peak RSS (VmHWM) — the goal is under 300 MB — and its CPU
#     seconds a minute;
#   - bytes stored per profile fetched against the raw gzip size of the
#     profiles the targets served — the goal is no more;
#   - the index's bytes a capture (bench/timeline.sh measures them over a
#     month).
#
#   N=500 MINUTES=4 bench/watch-scale.sh
#   N=10000 EVERY=15m bench/watch-scale.sh
#
# IDLE=1 watches the same fleet with a daily cadence and no triggers: idle
# local targets, only checked for restarts every poll (5 s). It reports the
# watcher's CPU seconds a minute after a 30 s warm-up, its peak RSS, the
# latency of /healthz, and how long SIGTERM takes to end it.
#
#   IDLE=1 N=10000 MINUTES=3 bench/watch-scale.sh
#
# PROFILE=DIR also serves watch's own /debug/pprof/ and keeps in DIR a CPU
# profile of a minute (after the warm-up, or the second minute), a heap
# profile (and with IDLE=1 a goroutine profile) at its end: where the
# watcher's time and memory go.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-500}
minutes=${MINUTES:-4}
idle=${IDLE:-0}
profile=${PROFILE:-}
every=${EVERY:-1m}
concurrency=${CONCURRENCY:-256}
[ "$idle" = 1 ] && every=24h
work=$(mktemp -d)
fleet= watch=
cleanup() {
	[ -n "$watch" ] && kill "$watch" 2>/dev/null || true
	[ -n "$fleet" ] && kill "$fleet" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/heapscope" ./cmd/heapscope
go build -o "$work/pprofleet" ./bench/cmd/pprofleet
echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); $(go version)"

"$work/pprofleet" -n "$n" -sd "$work/targets.json" -for "$((minutes + 3))m" 2>"$work/fleet.log" &
fleet=$!
for _ in $(seq 100); do [ -s "$work/targets.json" ] && break; sleep 0.1; done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/heapscope.yaml" <<YAML
listen: 127.0.0.1:$port
concurrency: $concurrency
defaults:
  every: $every
  window: 10s
  timeout: 30s
groups:
  - name: fleet
    file_sd:
      - files: [$work/targets.json]
YAML
# What a target serves, as it serves it: the raw gzip a stored profile is
# held against (the store recompresses what it keeps).
first=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["targets"][0])' "$work/targets.json")
curl -s "http://$first/debug/pprof/heap?gc=1" | wc -c >"$work/served-heap"
curl -s "http://$first/debug/pprof/goroutine?debug=0" | wc -c >"$work/served-goroutine"
curl -s "http://$first/debug/pprof/profile?seconds=1" | wc -c >"$work/served-profile"
debug=()
if [ -n "$profile" ]; then
	mkdir -p "$profile"
	debug=(--debug-pprof)
fi
"$work/heapscope" watch --config "$work/heapscope.yaml" --data "$work/data" "${debug[@]}" 2>"$work/watch.log" &
watch=$!
start=$(date +%s)
if [ "$idle" = 1 ]; then
	tck=$(getconf CLK_TCK)
	sleep 30
	t0=$(awk '{ print $14 + $15 }' /proc/$watch/stat)
	s0=$(date +%s.%N)
	if [ -n "$profile" ]; then
		curl -s -o "$profile/cpu.pb.gz" "127.0.0.1:$port/debug/pprof/profile?seconds=60" &
	fi
	sleep $((minutes * 60 - 30))
	if [ -n "$profile" ]; then
		curl -s -o "$profile/heap.pb.gz" "127.0.0.1:$port/debug/pprof/heap"
		curl -s -o "$profile/goroutine.pb.gz" "127.0.0.1:$port/debug/pprof/goroutine"
		cp "$work/heapscope" "$profile/heapscope"
	fi
	t1=$(awk '{ print $14 + $15 }' /proc/$watch/stat)
	s1=$(date +%s.%N)
	hwm=$(awk '/VmHWM/ { print $2 }' /proc/$watch/status)
	lat=$(for _ in $(seq 10); do curl -s -o /dev/null -m 30 -w '%{time_total}\n' "127.0.0.1:$port/healthz"; sleep 0.2; done | sort -n)
	k0=$(date +%s.%N)
	kill -TERM "$watch"
	wait "$watch" || true
	k1=$(date +%s.%N)
	watch=
	python3 - "$n" "$t0" "$t1" "$tck" "$s0" "$s1" "$hwm" "$k0" "$k1" $lat <<'PY'
import sys
n, t0, t1, tck = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s0, s1, hwm, k0, k1 = float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]), float(sys.argv[8]), float(sys.argv[9])
lat = [float(x) * 1000 for x in sys.argv[10:]]
cpu = (t1 - t0) / tck
print(f"idle targets {n}: CPU {cpu / (s1 - s0) * 60:.2f} s a minute ({cpu:.1f} s over {s1 - s0:.0f} s after the warm-up)")
print(f"watch peak RSS {hwm / 1024:.0f} MiB")
if lat:
    print(f"/healthz: median {lat[len(lat) // 2]:.1f} ms, max {lat[-1]:.1f} ms over {len(lat)} requests")
else:
    print("/healthz: no answer")
print(f"SIGTERM to exit: {k1 - k0:.2f} s")
PY
	exit 0
fi
if [ -n "$profile" ]; then
	(sleep 60 && curl -s -o "$profile/cpu.pb.gz" "127.0.0.1:$port/debug/pprof/profile?seconds=60") &
fi
sleep $((minutes * 60))
if [ -n "$profile" ]; then
	curl -s -o "$profile/heap.pb.gz" "127.0.0.1:$port/debug/pprof/heap"
	cp "$work/heapscope" "$profile/heapscope"
fi
metrics=$(curl -s "127.0.0.1:$port/metrics")
hwm=$(awk '/VmHWM/ { print $2 }' /proc/$watch/status)
# utime + stime, in clock ticks: what the watcher cost the machine.
ticks=$(awk '{ print $14 + $15 }' /proc/$watch/stat)
kill -TERM "$watch"
wait "$watch" || true
watch=
end=$(date +%s)

"$work/heapscope" history --data "$work/data" --format json --limit 0 >"$work/history.json"
python3 - "$work" "$n" "$start" "$end" "$hwm" "$ticks" "$(getconf CLK_TCK)" "$every" <<'PY'
import json, os, sys, glob
work, n, start, end, hwm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
cpu = int(sys.argv[6]) / int(sys.argv[7])
every = sys.argv[8]
period = int(every[:-1]) * {"s": 1, "m": 60, "h": 3600}[every[-1]]
h = json.load(open(os.path.join(work, "history.json")))
runs = h["runs"]
per = {}
for r in runs:
    per.setdefault(r["target"], []).append(r["time"])
twice = sum(len(v) - len(set(v)) for v in per.values())
# Slots due: watch spreads each target's slot over the period; those whose
# window ended before the stop were due.
due = n * (end - start - 45) // period
served = {p: int(open(os.path.join(work, "served-" + p)).read()) for p in ("heap", "goroutine", "profile")}
# Everything the store holds: the runs and the index.
index = sum(os.path.getsize(f) for f in glob.glob(os.path.join(work, "data", "index.db*")))
stored = index
profiles = 0
raw = 0
for r in runs:
    d = os.path.join(work, "data", r["path"])
    for root, _, files in os.walk(d):
        for f in files:
            stored += os.path.getsize(os.path.join(root, f))
    for f in glob.glob(os.path.join(d, "profiles", "*.pb.gz")):
        name = os.path.basename(f)
        kind = "heap" if name.startswith("heap") else "goroutine" if name.startswith("goroutine") else "profile" if name == "cpu.pb.gz" else None
        if kind:
            profiles += 1
            raw += served[kind]
print(f"targets {n}, {len(runs)} runs stored in {end - start} s (about {due} slots due), {twice} slots captured twice")
print(f"targets {n} every {every}: CPU {cpu / (end - start) * 60:.2f} s a minute")
print(f"watch peak RSS {hwm / 1024:.0f} MiB (goal: under 300 MB); CPU {cpu:.0f} s, {cpu / max(len(runs), 1):.3f} s a capture")
if runs:
    # A month of captures is bench/timeline.sh's to measure: here each
    # target's problems are kept once over a few captures only.
    print(f"index {index / len(runs):.0f} bytes a capture ({index / 1048576:.1f} MiB for {len(runs)} runs)")
if profiles:
    print(f"stored {stored / profiles / 1024:.1f} KiB per profile fetched (runs and index); the targets served {raw / profiles / 1024:.1f} KiB of gzip per profile (ratio {stored / raw:.2f}; goal: at most 1)")
PY
echo "$metrics" | grep -E '^heapscope_watch_(missed_slots_total|schedule_lag_seconds_(sum|count)|captures_total)' | sed 's/^/  /'
echo "$metrics" | awk '/^heapscope_watch_schedule_lag_seconds_bucket/ { print "  " $0 }' | tail -4
# Why captures failed, the most common first.
grep 'capture failed' "$work/watch.log" | sed -n 's/.*err="\{0,1\}\([^"]*\).*/\1/p' | sed 's/[0-9][0-9.]*/N/g' | sort | uniq -c | sort -rn | head -5 | sed 's/^/  failed: /'
