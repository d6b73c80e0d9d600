#!/usr/bin/env bash
# Measures heapscope's load generator side by side with wrk against one
# minimal Go HTTP server on 127.0.0.1, and prints medians and ratios:
#
#   closed model  heapscope --connections N vs wrk -c N: throughput, and
#                 client CPU per request (user + system time of the client
#                 process divided by its requests);
#   open model    heapscope --rate at 80 % of wrk's throughput: achieved rate
#                 against the asked one, lag behind the schedule;
#   overload      heapscope --rate at twice wrk's throughput: it must say it
#                 fell behind, with bounded memory and no error storm;
#   allocations   the generator's own allocations per request, from the Go
#                 benchmark BenchmarkRun/closed.
#
# The server and the clients are pinned to different cores (taskset), and
# the tools alternate, ROUNDS times. Installs wrk from Debian when missing.
# Exits 1 when a target is missed: throughput ≥ 0.9 × wrk's, CPU per
# request ≤ 1.5 × wrk's, open model within 1 % of the asked rate, at most 2
# allocations per request.
#
# Usage: bench/load-vs-wrk.sh   (environment: ROUNDS=5 DURATION=5s
#        CONNECTIONS=64 SERVER_CPUS=0 CLIENT_CPUS=1)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-64}
SERVER_CPUS=${SERVER_CPUS:-0}
CLIENT_CPUS=${CLIENT_CPUS:-1}

if ! command -v wrk >/dev/null 2>&1; then
  echo "installing wrk from Debian…" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
for tool in taskset go awk; do
  command -v "$tool" >/dev/null 2>&1 || { echo "load-vs-wrk: needs $tool" >&2; exit 2; }
done

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The server: net/http with a small JSON answer, the kind of service
# heapscope profiles.
mkdir -p "$work/server"
cat >"$work/server/main.go" <<'EOF'
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "path": r.URL.Path})
	}))
}
EOF
printf 'module loadserver\n\ngo 1.26\n' >"$work/server/go.mod"
(cd "$work/server" && GOWORK=off go build -o "$work/loadserver" .)
CGO_ENABLED=0 go build -o "$work/heapscope" ./cmd/heapscope

client_threads=$(taskset -c "$CLIENT_CPUS" nproc)
taskset -c "$SERVER_CPUS" "$work/loadserver" >"$work/addr" &
server_pid=$!
for _ in $(seq 50); do [ -s "$work/addr" ] && break; sleep 0.1; done
url="http://$(head -1 "$work/addr")/"

echo "load-vs-wrk: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), Go $(go env GOVERSION), $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2)"
echo "server on cpu $SERVER_CPUS, clients on cpu $CLIENT_CPUS; $CONNECTIONS connections, $DURATION per run, $ROUNDS rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
json_field() { grep -o "\"$1\": [-0-9.e+]*" | head -1 | awk '{print $2}'; }
json_bool() { grep -o "\"$1\": [a-z]*" | head -1 | awk '{print $2}'; }

# run_timed FILE CMD…: runs CMD pinned to the client cores, its stdout in
# FILE, and prints its user + system CPU seconds.
run_timed() {
  local out=$1; shift
  local TIMEFORMAT='%U %S'
  { time taskset -c "$CLIENT_CPUS" "$@" >"$out" 2>/dev/null; } 2>&1 | awk '{print $1 + $2}'
}

wrk_rps=(); wrk_cpu=(); hs_rps=(); hs_cpu=()
run_wrk() {
  local cpu reqs rps
  cpu=$(run_timed "$work/wrk.out" wrk -t"$client_threads" -c"$CONNECTIONS" -d"$DURATION" "$url")
  reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
  wrk_rps+=("$rps"); wrk_cpu+=("$(awk -v c="$cpu" -v n="$reqs" 'BEGIN {printf "%.2f", c / n * 1e6}')")
}
run_heapscope() {
  local cpu reqs rps
  cpu=$(run_timed "$work/hs.json" "$work/heapscope" load "$url" --connections "$CONNECTIONS" --duration "$DURATION" --format json)
  reqs=$(json_field completed <"$work/hs.json")
  rps=$(json_field achieved_rate <"$work/hs.json")
  hs_rps+=("$rps"); hs_cpu+=("$(awk -v c="$cpu" -v n="$reqs" 'BEGIN {printf "%.2f", c / n * 1e6}')")
}

echo
echo "== closed model: $CONNECTIONS connections back to back"
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then run_wrk; run_heapscope; else run_heapscope; run_wrk; fi
  printf 'round %d: wrk %8.0f req/s %6.2f µs CPU/req | heapscope %8.0f req/s %6.2f µs CPU/req\n' \
    "$round" "${wrk_rps[-1]}" "${wrk_cpu[-1]}" "${hs_rps[-1]}" "${hs_cpu[-1]}"
done
m_wrk_rps=$(printf '%s\n' "${wrk_rps[@]}" | median)
m_wrk_cpu=$(printf '%s\n' "${wrk_cpu[@]}" | median)
m_hs_rps=$(printf '%s\n' "${hs_rps[@]}" | median)
m_hs_cpu=$(printf '%s\n' "${hs_cpu[@]}" | median)
tput_ratio=$(awk -v a="$m_hs_rps" -v b="$m_wrk_rps" 'BEGIN {printf "%.2f", a / b}')
cpu_ratio=$(awk -v a="$m_hs_cpu" -v b="$m_wrk_cpu" 'BEGIN {printf "%.2f", a / b}')

echo
rate=$(awk -v r="$m_wrk_rps" 'BEGIN {printf "%d", r * 0.8}')
echo "== open model: $rate req/s asked (80 % of wrk's median)"
open_ratio=(); open_p99=(); open_max=(); open_behind=()
for round in $(seq "$ROUNDS"); do
  taskset -c "$CLIENT_CPUS" "$work/heapscope" load "$url" --rate "$rate" --duration "$DURATION" --format json >"$work/open.json" 2>/dev/null
  achieved=$(json_field achieved_rate <"$work/open.json")
  open_ratio+=("$(awk -v a="$achieved" -v r="$rate" 'BEGIN {printf "%.4f", a / r}')")
  p99=$(grep -A4 '"lag"' "$work/open.json" | json_field p99_seconds)
  max=$(grep -A4 '"lag"' "$work/open.json" | json_field max_seconds)
  open_p99+=("$p99"); open_max+=("$max"); open_behind+=("$(json_bool fell_behind <"$work/open.json")")
  printf 'round %d: achieved %8.1f req/s (%.2f %% of asked), lag p99 %.2f ms, max %.2f ms, latency p99 %.2f ms, fell behind: %s\n' \
    "$round" "$achieved" "$(awk -v x="${open_ratio[-1]}" 'BEGIN {print x * 100}')" \
    "$(awk -v x="$p99" 'BEGIN {print x * 1000}')" "$(awk -v x="$max" 'BEGIN {print x * 1000}')" \
    "$(grep -A8 '"latency_seconds"' "$work/open.json" | json_field p99 | awk '{print $1 * 1000}')" "${open_behind[-1]}"
done
m_open_ratio=$(printf '%s\n' "${open_ratio[@]}" | median)
m_open_p99=$(printf '%s\n' "${open_p99[@]}" | median)

echo
over=$((rate * 5 / 2))
echo "== overload: $over req/s asked (twice wrk's median), --max-in-flight 256"
peak_kb=0
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f '%M' -o "$work/rss" taskset -c "$CLIENT_CPUS" "$work/heapscope" load "$url" --rate "$over" --max-in-flight 256 \
    --duration "$DURATION" --format json >"$work/over.json" 2>/dev/null
  peak_kb=$(tail -1 "$work/rss")
else
  taskset -c "$CLIENT_CPUS" "$work/heapscope" load "$url" --rate "$over" --max-in-flight 256 --duration "$DURATION" --format json >"$work/over.json" 2>/dev/null
fi
printf 'achieved %.0f req/s of %d asked, %s dropped, %s errors, fell behind: %s, lag max %.0f ms, peak RSS %s MiB\n' \
  "$(json_field achieved_rate <"$work/over.json")" "$over" "$(json_field dropped <"$work/over.json")" \
  "$(json_field errors <"$work/over.json")" "$(json_bool fell_behind <"$work/over.json")" \
  "$(grep -A4 '"lag"' "$work/over.json" | json_field max_seconds | awk '{print $1 * 1000}')" \
  "$(awk -v k="$peak_kb" 'BEGIN {printf "%.0f", k / 1024}')"

echo
echo "== allocations: go test -bench BenchmarkRun/closed"
allocs=$(go test -run '^$' -bench 'BenchmarkRun/closed$' -benchtime 200000x ./internal/load | awk '/BenchmarkRun\/closed/ {for (i = 1; i <= NF; i++) if ($i == "allocs/op") print $(i-1)}')
echo "allocs/op: $allocs"

missed=0
verdict() { if awk "BEGIN {exit !($1)}"; then echo "ok"; else echo "MISSED"; fi; }
check() { awk "BEGIN {exit !($1)}" || missed=1; }
check "$tput_ratio >= 0.9"; check "$cpu_ratio <= 1.5"; check "$m_open_ratio >= 0.99 && $m_open_ratio <= 1.01"; check "$allocs <= 2"
echo
echo "== medians (load average now $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-38s %12s %12s %8s  %s\n' "" "wrk" "heapscope" "ratio" "target"
printf '%-38s %12.0f %12.0f %8s  ≥ 0.90 %s\n' "closed model throughput (req/s)" "$m_wrk_rps" "$m_hs_rps" "$tput_ratio" "$(verdict "$tput_ratio >= 0.9")"
printf '%-38s %12.2f %12.2f %8s  ≤ 1.50 %s\n' "client CPU per request (µs)" "$m_wrk_cpu" "$m_hs_cpu" "$cpu_ratio" "$(verdict "$cpu_ratio <= 1.5")"
printf '%-38s %12s %12.4f %8s  0.99–1.01 %s\n' "open model achieved/asked at 80 %" "" "$m_open_ratio" "" "$(verdict "$m_open_ratio >= 0.99 && $m_open_ratio <= 1.01")"
printf '%-38s %12s %12.2f\n' "open model lag p99 (ms)" "" "$(awk -v x="$m_open_p99" 'BEGIN {print x * 1000}')"
printf '%-38s %12s %12s %8s  ≤ 2 %s\n' "generator allocations per request" "" "$allocs" "" "$(verdict "$allocs <= 2")"
exit "$missed"
