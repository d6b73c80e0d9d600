#!/usr/bin/env bash
# Measures heapscope's load generator side by side with wrk against one
# minimal Go HTTP server on 127.0.0.1 (HTTP/1.1 keep-alive), and prints
# medians and ratios:
#
#   closed model  heapscope --connections N vs wrk -c N, for each N in
#                 CONNECTIONS: throughput, counted at the server (requests
#                 it answered between its first and last answer of the
#                 run); client CPU per request, from /proc (the user +
#                 system time of the tool, read as the cutime + cstime of
#                 the shell that waited for it, over the server's count);
#                 latency p50 and p99 as each tool reports them;
#   open model    heapscope --rate at 80 % of wrk's throughput at the middle
#                 connection count: achieved rate against the asked one,
#                 lag behind the schedule;
#   overload      heapscope --rate at twice wrk's throughput: it must say it fell
#                 behind, with bounded memory and no error storm;
#   allocations   the generator's own allocations per request, from the Go
#                 benchmark BenchmarkRun/closed.
#
# The server and the clients are pinned to different cores (taskset), and
# the tools alternate, ROUNDS times for each connection count; the
# medians' ratios are fair on a busy machine even when the absolute figures
# are not.
#
# wrk is Debian's (apt-get install wrk); the script installs it when missing
# and it can (as root). Exits 1 when a target is missed: for every
# connection count, throughput ≥ 1.0 × wrk's and CPU per request ≤ 1.2 ×
# wrk's; the open model within 1 % of the asked rate; no allocation per
# request.
#
# Usage: bench/load-vs-wrk.sh   (environment: ROUNDS=5 DURATION=5s
#        CONNECTIONS="2 64 512" SERVER_CPUS=0 CLIENT_CPUS=1; HEAPSCOPE=path
#        runs that binary instead of building ./cmd/heapscope)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-"2 64 512"}
HEAPSCOPE=${HEAPSCOPE:-}
SERVER_CPUS=${SERVER_CPUS:-0}
CLIENT_CPUS=${CLIENT_CPUS:-1}

if ! command -v wrk >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "load-vs-wrk: needs wrk: sudo apt-get install wrk" >&2
    exit 2
  fi
  echo "installing wrk from Debian (apt-get install wrk)…" >&2
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
# heapscope profiles. It counts the requests it answers, and the times of
# the first and last answer; a second listener, its address on the second
# line, returns "count first_ns last_ns" and starts a new count.
mkdir -p "$work/server"
cat >"$work/server/main.go" <<'EOF'
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

var (
	mu          sync.Mutex
	count       uint64
	first, last time.Time
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stats, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	fmt.Println(stats.Addr())
	go http.Serve(stats, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n, f, l := count, first, last
		count, first, last = 0, time.Time{}, time.Time{}
		mu.Unlock()
		var span int64
		if n > 1 {
			span = l.Sub(f).Nanoseconds()
		}
		fmt.Fprintf(w, "%d %d\n", n, span)
	}))
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "path": r.URL.Path})
		now := time.Now()
		mu.Lock()
		if count == 0 {
			first = now
		}
		count++
		last = now
		mu.Unlock()
	}))
}
EOF
printf 'module loadserver\n\ngo 1.26\n' >"$work/server/go.mod"
(cd "$work/server" && GOWORK=off go build -o "$work/loadserver" .)
if [ -n "$HEAPSCOPE" ]; then
  cp "$HEAPSCOPE" "$work/heapscope"
else
  CGO_ENABLED=0 go build -o "$work/heapscope" ./cmd/heapscope
fi

client_threads=$(taskset -c "$CLIENT_CPUS" nproc)
taskset -c "$SERVER_CPUS" "$work/loadserver" >"$work/addr" &
server_pid=$!
for _ in $(seq 50); do [ "$(wc -l <"$work/addr")" -ge 2 ] && break; sleep 0.1; done
url="http://$(head -1 "$work/addr")/"
stats_url="http://$(sed -n 2p "$work/addr")/"

echo "load-vs-wrk: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), Go $(go env GOVERSION), $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2)"
echo "server on cpu $SERVER_CPUS, clients on cpu $CLIENT_CPUS; connections $CONNECTIONS; $DURATION per run, $ROUNDS rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
json_field() { grep -o "\"$1\": [-0-9.e+]*" | head -1 | awk '{print $2}'; }
json_bool() { grep -o "\"$1\": [a-z]*" | head -1 | awk '{print $2}'; }

# server_stats prints the requests the server answered since the last call,
# and their rate between the first answer and the last.
server_stats() {
  curl -fsS "$stats_url" 2>/dev/null || wget -qO- "$stats_url"
}

# run_timed FILE CMD…: runs CMD pinned to the client cores, its stdout in
# FILE, and prints its user + system CPU seconds from /proc: the cutime and
# cstime of the shell that waited for it.
run_timed() {
  local out=$1; shift
  taskset -c "$CLIENT_CPUS" bash -c '"$@" >"$0" 2>/dev/null; read -r -a s </proc/$$/stat; echo "${s[15]} ${s[16]}"' "$out" "$@" |
    awk -v hz="$(getconf CLK_TCK)" '{print ($1 + $2) / hz}'
}

# seconds D prints the seconds of a wrk-style duration: 850us, 3.2ms, 1.5s.
seconds() {
  awk -v d="$1" 'BEGIN {
    if (d ~ /us$/) f = 1e-6; else if (d ~ /ms$/) f = 1e-3; else if (d ~ /m$/) f = 60; else f = 1
    sub(/[a-z]+$/, "", d); print d * f }'
}

# measure TOOL CPU: prints "req/s µs-CPU/req" from the server's count.
measure() {
  local cpu=$1 n span
  read -r n span < <(server_stats)
  awk -v n="$n" -v s="$span" -v c="$cpu" 'BEGIN {printf "%.1f %.3f\n", n / (s / 1e9), c / n * 1e6}'
}

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
json_field() { grep -o "\"$1\": [-0-9.e+]*" | head -1 | awk '{print $2}'; }
json_bool() { grep -o "\"$1\": [a-z]*" | head -1 | awk '{print $2}'; }

run_wrk() {
  local cpu
  server_stats >/dev/null
  cpu=$(run_timed "$work/wrk.out" wrk -t"$client_threads" -c"$1" -d"$DURATION" --latency "$url")
  read -r rps cpr < <(measure "$cpu")
  p50=$(seconds "$(awk '$1 == "50%" {print $2}' "$work/wrk.out")")
  p99=$(seconds "$(awk '$1 == "99%" {print $2}' "$work/wrk.out")")
}
run_heapscope() {
  local cpu
  server_stats >/dev/null
  cpu=$(run_timed "$work/hs.json" "$work/heapscope" load "$url" --connections "$1" --duration "$DURATION" --format json)
  read -r rps cpr < <(measure "$cpu")
  p50=$(grep -A8 '"latency_seconds"' "$work/hs.json" | json_field p50)
  p99=$(grep -A8 '"latency_seconds"' "$work/hs.json" | json_field p99)
}

missed=0
verdict() { if awk "BEGIN {exit !($1)}"; then echo "ok"; else echo "MISSED"; fi; }
check() { awk "BEGIN {exit !($1)}" || missed=1; }
ms() { awk -v x="$1" 'BEGIN {printf "%.2f", x * 1000}'; }
table=()
mid_wrk_rps=""
read -r -a counts <<<"$CONNECTIONS"
middle=${counts[$(( (${#counts[@]} - 1) / 2 ))]}
for conns in $CONNECTIONS; do
  echo
  echo "== closed model: $conns connections back to back"
  wrk_rps=(); wrk_cpu=(); wrk_p50=(); wrk_p99=(); hs_rps=(); hs_cpu=(); hs_p50=(); hs_p99=()
  for round in $(seq "$ROUNDS"); do
    order="wrk heapscope"
    [ $((round % 2)) -eq 0 ] && order="heapscope wrk"
    for tool in $order; do
      if [ "$tool" = wrk ]; then
        run_wrk "$conns"; wrk_rps+=("$rps"); wrk_cpu+=("$cpr"); wrk_p50+=("$p50"); wrk_p99+=("$p99")
      else
        run_heapscope "$conns"; hs_rps+=("$rps"); hs_cpu+=("$cpr"); hs_p50+=("$p50"); hs_p99+=("$p99")
      fi
    done
    printf 'round %d: wrk %8.0f req/s %6.2f µs CPU/req p50 %6.2f p99 %6.2f ms | heapscope %8.0f req/s %6.2f µs CPU/req p50 %6.2f p99 %6.2f ms\n' \
      "$round" "${wrk_rps[-1]}" "${wrk_cpu[-1]}" "$(ms "${wrk_p50[-1]}")" "$(ms "${wrk_p99[-1]}")" \
      "${hs_rps[-1]}" "${hs_cpu[-1]}" "$(ms "${hs_p50[-1]}")" "$(ms "${hs_p99[-1]}")"
  done
  m_wrk_rps=$(printf '%s\n' "${wrk_rps[@]}" | median)
  m_wrk_cpu=$(printf '%s\n' "${wrk_cpu[@]}" | median)
  m_hs_rps=$(printf '%s\n' "${hs_rps[@]}" | median)
  m_hs_cpu=$(printf '%s\n' "${hs_cpu[@]}" | median)
  tput_ratio=$(awk -v a="$m_hs_rps" -v b="$m_wrk_rps" 'BEGIN {printf "%.2f", a / b}')
  cpu_ratio=$(awk -v a="$m_hs_cpu" -v b="$m_wrk_cpu" 'BEGIN {printf "%.2f", a / b}')
  check "$tput_ratio >= 1.0"; check "$cpu_ratio <= 1.2"
  [ "$conns" = "$middle" ] && mid_wrk_rps=$m_wrk_rps
  table+=("$(printf '%5s  %10.0f %10.0f %6s %-6s  %7.2f %7.2f %6s %-6s  %6s %6s  %6s %6s' "$conns" \
    "$m_wrk_rps" "$m_hs_rps" "$tput_ratio" "$(verdict "$tput_ratio >= 1.0")" \
    "$m_wrk_cpu" "$m_hs_cpu" "$cpu_ratio" "$(verdict "$cpu_ratio <= 1.2")" \
    "$(ms "$(printf '%s\n' "${wrk_p50[@]}" | median)")" "$(ms "$(printf '%s\n' "${hs_p50[@]}" | median)")" \
    "$(ms "$(printf '%s\n' "${wrk_p99[@]}" | median)")" "$(ms "$(printf '%s\n' "${hs_p99[@]}" | median)")")")
done
m_wrk_rps=$mid_wrk_rps

echo
rate=$(awk -v r="$m_wrk_rps" 'BEGIN {printf "%d", r * 0.8}')
echo "== open model: $rate req/s asked (80 % of wrk's median at $middle connections)"
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
echo "== overload: $over req/s asked (twice wrk's median at $middle connections), --max-in-flight 256"
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

check "$m_open_ratio >= 0.99 && $m_open_ratio <= 1.01"; check "$allocs < 1"
echo
echo "== medians (load average now $(cut -d' ' -f1-3 /proc/loadavg))"
echo "closed model: requests/s at the server, client CPU µs per request, latency ms as each tool reports it"
printf '%5s  %10s %10s %6s %-6s  %7s %7s %6s %-6s  %6s %6s  %6s %6s\n' conns "wrk req/s" "hs req/s" ratio "≥1.0" \
  "wrk µs" "hs µs" ratio "≤1.2" "wrk50" "hs50" "wrk99" "hs99"
printf '%s\n' "${table[@]}"
printf 'open model achieved/asked at 80 %%: %.4f (0.99–1.01 %s), lag p99 %.2f ms\n' "$m_open_ratio" \
  "$(verdict "$m_open_ratio >= 0.99 && $m_open_ratio <= 1.01")" "$(awk -v x="$m_open_p99" 'BEGIN {print x * 1000}')"
printf 'generator allocations per request: %s (0 %s)\n' "$allocs" "$(verdict "$allocs < 1")"
exit "$missed"
