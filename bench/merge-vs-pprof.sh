#!/usr/bin/env bash
# merge-vs-pprof.sh: heapscope's merge of stored profiles (pprofx.Merger,
# what the server's /api/v1/merge will run) side by side with
# `go tool pprof -proto`, on a day of one service's heap profiles.
#
# bench/cmd/genprofile writes the series into a temporary directory: 96
# heap profiles of one process, one per 15 minutes of a day as a store
# keeps them, each of about 300 to 500 KB of gzip (real runtime/pprof
# output, 20–60-frame stacks); between two snapshots thirty new walks
# and 500 earlier ones taken again, with a tenth of the kept memory
# freed, so the profiles share most of their stacks and differ in their
# values. Then RUNS rounds run `go tool pprof -proto` over the 96 files and
# bench/cmd/mergeprofiles (pprofx.Merger, one profile at a time) over the
# same files, rotating their order, each measured by bench/cmd/runstat
# (wall time, peak RSS, CPU time). Before the rounds, the two merged
# profiles are checked to give the same top tables for every sample type.
#
# The script prints the medians and the speed-up, and checks the targets:
# heapscope's median wall time at least 3× shorter than pprof's, and its
# peak RSS at most 100 MiB. It exits with status 1 when a target is
# missed (2 when the tools fail or disagree).
#
#   bench/merge-vs-pprof.sh                     # RUNS=5 PROFILES=96 SIZE=300KB
#   RUNS=3 PROFILES=24 bench/merge-vs-pprof.sh
#
# Nothing is left behind: the profiles and binaries live in a temporary
# directory removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-5}
profiles=${PROFILES:-96}
size=${SIZE:-300KB}
work=$(mktemp -d "${TMPDIR:-/tmp}/merge-vs-pprof.XXXXXX")
trap 'rm -rf "$work"' EXIT

. bench/profile-tools.sh
build_profile_tools
go build -o "$work/mergeprofiles" ./bench/cmd/mergeprofiles
machine
echo "runs per command: $runs, alternating"

mkdir "$work/series"
"$work/genprofile" -size "$size" -series "$profiles" -replay 500 -o "$work/series/heap-%03d.pb.gz" 2>"$work/gen.log" || { cat "$work/gen.log" >&2; exit 2; }
files=("$work"/series/heap-*.pb.gz)
read -r total smallest largest < <(stat -c %s "${files[@]}" | sort -n | awk '{ s += $1; v[NR] = $1 } END { printf "%.1f %.0f %.0f\n", s / 1048576, v[1] / 1024, v[NR] / 1024 }')
echo "profiles: ${#files[@]} heap profiles, $smallest–$largest KB each, $total MB in all"

# The same merge: equal top tables of every sample type.
"$pprof" -proto "${files[@]}" >"$work/pprof.pb.gz" 2>"$work/pprof.log" || { cat "$work/pprof.log" >&2; exit 2; }
"$work/mergeprofiles" -o "$work/heapscope.pb.gz" "${files[@]}"
for sample in alloc_objects alloc_space inuse_objects inuse_space; do
	for tool in pprof heapscope; do
		"$pprof" -top -nodecount=25 -sample_index="$sample" "$work/$tool.pb.gz" 2>/dev/null | grep -v '^File:' >"$work/top-$tool.txt"
	done
	if ! diff -q "$work/top-pprof.txt" "$work/top-heapscope.txt" >/dev/null; then
		echo "the merged profiles differ ($sample):" >&2
		diff "$work/top-pprof.txt" "$work/top-heapscope.txt" >&2 || true
		exit 2
	fi
done
echo "merged profiles: the same top tables for every sample type"
echo

declare -A wall rss cpu
commands=(pprof merge)
run_one() { # tool
	case $1 in
	pprof) "$work/runstat" -- "$pprof" -proto "${files[@]}" 2>>"$work/pprof.log" ;;
	merge) "$work/runstat" -- "$work/mergeprofiles" -o "$work/out.pb.gz" "${files[@]}" ;;
	esac
}
alternate "$runs"

printf '%-34s %9s %9s %10s %9s\n' command "wall s" "CPU s" "RSS MiB" speed-up
missed=0
for c in "${commands[@]}"; do
	case $c in
	pprof) label="go tool pprof -proto ($profiles files)" ;;
	merge) label="heapscope merge ($profiles files)" ;;
	esac
	speed="" mark=""
	if [[ $c == merge ]]; then
		speed=$(awk -v p="${wall[pprof]}" -v w="${wall[$c]}" 'BEGIN { printf "%.1f×", p / w }')
		if awk -v p="${wall[pprof]}" -v w="${wall[$c]}" -v r="${rss[$c]}" \
			'BEGIN { exit !(p / w >= 3 && r / 1024 <= 100) }'; then
			mark="  target met"
		else
			mark="  TARGET MISSED"
			missed=1
		fi
	fi
	printf '%-34s %9.2f %9.2f %10.0f %9s%s\n' "$label" "${wall[$c]}" "${cpu[$c]}" \
		"$(awk -v k="${rss[$c]}" 'BEGIN { print k / 1024 }')" "$speed" "$mark"
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "speed-up: pprof's median wall time over heapscope's; RSS: median peak resident memory"
echo "targets: speed-up ≥ 3×, heapscope's peak RSS ≤ 100 MiB"
exit "$missed"
