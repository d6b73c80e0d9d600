#!/usr/bin/env bash
# ingest.sh: what a capture costs to store, in the shared store of a fleet
# (PostgreSQL + an S3-compatible bucket) and in the embedded one (SQLite +
# files) side by side, on this machine.
#
# The benchmarks are internal/store/shared's (go doc there):
#   - BenchmarkIngest commits CAPTURES copies (1000) of one real lean
#     capture — the leaky example under 400 requests/s, captured by
#     watch.Once with watch's defaults (heap, allocs, goroutine and CPU
#     profiles, three snapshots) over a WINDOW-long window (30s, watch's
#     default) — spread over 10,000 targets, from each number of goroutines
#     in COMMITTERS (1,8,32) at once, into a fresh store of each backend;
#   - BenchmarkRunDir reads READS runs (300) back from the shared store
#     into an empty cache, as a server does the first time;
#   - BenchmarkRetain removes RETAIN runs (1000) past their age;
#   - BenchmarkIngest again, shared store and 8 committers, with a
#     CHECKPOINT every 5 s over 500 targets each captured every ~10 s:
#     the WAL a capture writes when, as in production, each page it
#     changes is changed first since the last checkpoint (full-page
#     writes).
# PostgreSQL is a cluster of the benchmark's own with fsync and
# synchronous commits on (DURABLE=false: the tests' cluster, without);
# the S3 server is versitygw over a local directory (scripts/test.sh
# installs it), behind a proxy that counts the requests. Everything runs
# on this machine's cores: the client, PostgreSQL, versitygw.
#
# It prints one table of throughput, with the ratio of the shared store's
# to the embedded store's (the reference), and one of what each capture
# costs; docs/scale.md works a fleet's needs out from them.
#
#   CAPTURES=1000 COMMITTERS=1,8,32 WINDOW=30s READS=300 RETAIN=1000 FPW_CAPTURES=3000 bench/ingest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
captures=${CAPTURES:-1000}
committers=${COMMITTERS:-1,8,32}
window=${WINDOW:-30s}
reads=${READS:-300}
retain=${RETAIN:-1000}
durable=${DURABLE:-true}
fpw=${FPW_CAPTURES:-3000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go test -c -o "$work/shared.test" ./internal/store/shared
echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); $(go version)"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

# bench NAME PATTERN N [FLAG…]: runs the benchmarks PATTERN matches N
# times each, every one in the same test binary (one capture made in its
# setup), with the flags given after the script's own.
bench() {
	(cd internal/store/shared && "$work/shared.test" -test.run '^$' -test.bench "$2" \
		-test.benchtime "$3x" -test.count 1 -test.timeout 60m -test.v \
		-ingest.window "$window" -ingest.committers "$committers" -ingest.durable="$durable" "${@:4}") >"$work/$1" 2>&1 ||
		{ cat "$work/$1" >&2; exit 1; }
}

# field LINE UNIT prints the value a benchmark result line gives UNIT (0
# when it gives none).
field() { awk -v unit="$2" '{ v = 0; for (i = 2; i <= NF; i++) if ($i == unit) v = $(i - 1); print v }' <<<"$1"; }

echo "capturing the leaky example over a $window window, then $captures captures a benchmark…"
bench ingest '^BenchmarkIngest$' "$captures"
# What was committed, and the tables' rows and bytes after each benchmark
# (its last log line: its largest run).
sed -n 's/^ *ingest_bench_test.go:[0-9]*: //p' "$work/ingest" |
	awk -F': ' '/^each capture/ { print; next } { last[$1] = $0; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
		END { for (i = 1; i <= n; i++) print last[order[i]] }'
echo "load average after the ingest: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

printf '%-10s %-9s %10s %8s %8s %9s\n' committers store captures/s p50-ms p99-ms "vs embedded"
for n in ${committers//,/ }; do
	emb=$(grep -E "^BenchmarkIngest/store=embedded/committers=$n-" "$work/ingest")
	sh=$(grep -E "^BenchmarkIngest/store=shared/committers=$n-" "$work/ingest")
	for s in embedded shared; do
		line=$emb
		[ "$s" = shared ] && line=$sh
		ratio=""
		[ "$s" = shared ] && ratio=$(awk -v a="$(field "$sh" captures/s)" -v b="$(field "$emb" captures/s)" 'BEGIN { printf "%.2f×", a / b }')
		printf '%-10s %-9s %10.1f %8.1f %8.1f %9s\n' "$n" "$s" "$(field "$line" captures/s)" \
			"$(field "$line" p50-ms)" "$(field "$line" p99-ms)" "$ratio"
	done
done
echo

echo "per capture:"
printf '%-10s %-9s %7s %5s %7s %7s %7s %7s %6s %6s %6s\n' committers store "run KB" rows "db B" "WAL B" "cli ms" "PG ms" "S3 ms" S3-req "conns"
for n in ${committers//,/ }; do
	for s in embedded shared; do
		line=$(grep -E "^BenchmarkIngest/store=$s/committers=$n-" "$work/ingest")
		# The shared store's own columns: "-" for the embedded one.
		only() { if [ "$s" = shared ]; then printf "$1" "$(field "$line" "$2")"; else echo -; fi; }
		printf '%-10s %-9s %7.1f %5.1f %7.0f %7s %7.1f %7s %7s %6s %6s\n' "$n" "$s" \
			"$(awk -v b="$(field "$line" run-B/capture)" 'BEGIN { print b / 1000 }')" \
			"$(field "$line" rows/capture)" "$(field "$line" db-B/capture)" "$(only %.0f wal-B/capture)" \
			"$(field "$line" client-cpu-ms/capture)" "$(only %.1f pg-cpu-ms/capture)" \
			"$(only %.1f s3-cpu-ms/capture)" "$(only %.1f s3-req/capture)" "$(only %.2f conns/capture)"
	done
done
echo "(cli: this process, the store's client with the counting S3 proxy and the writing of each run's"
echo " files; PG: the PostgreSQL cluster's processes; S3: versitygw. db B: the tables' and indexes'"
echo " growth; conns: new connections to S3.)"
echo

bench reads '^BenchmarkRunDir$' "$reads"
line=$(grep -E '^BenchmarkRunDir-' "$work/reads")
printf 'cold reads (RunDir, empty cache), %d runs: %.1f reads/s, p50 %.1f ms, p99 %.1f ms, client CPU %.1f ms a read, %.2f S3 requests a read (LIST %.2f, GET %.2f)\n' \
	"$reads" "$(field "$line" reads/s)" "$(field "$line" p50-ms)" "$(field "$line" p99-ms)" "$(field "$line" client-cpu-ms/read)" \
	"$(field "$line" s3-req/read)" "$(field "$line" LIST/read)" "$(field "$line" GET/read)"

bench retain '^BenchmarkRetain$' "$retain"
emb=$(grep -E '^BenchmarkRetain/store=embedded-' "$work/retain")
sh=$(grep -E '^BenchmarkRetain/store=shared-' "$work/retain")
printf 'retention, %d runs removed at once: embedded %.0f runs/s, shared %.0f runs/s (%.2f×), %.3f S3 requests a run (LIST %.3f, DELETE %.4f), %.0f WAL bytes a run\n' \
	"$retain" "$(field "$emb" runs/s)" "$(field "$sh" runs/s)" \
	"$(awk -v a="$(field "$sh" runs/s)" -v b="$(field "$emb" runs/s)" 'BEGIN { print a / b }')" \
	"$(field "$sh" s3-req/run)" "$(field "$sh" LIST/run)" "$(field "$sh" DELETE/run)" "$(field "$sh" wal-B/run)"

bench fpw '^BenchmarkIngest$/^store=shared$/^committers=8$' "$fpw" -ingest.committers=8 -ingest.targets=500 -ingest.checkpoint=5s
line=$(grep -E '^BenchmarkIngest/store=shared/committers=8-' "$work/fpw")
printf 'WAL with a checkpoint every 5 s (each page written whole once after it): %.0f bytes a capture\n' "$(field "$line" wal-B/capture)"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
