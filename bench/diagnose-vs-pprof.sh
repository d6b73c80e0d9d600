#!/usr/bin/env bash
# diagnose-vs-pprof.sh: `heapscope diagnose` over a series of 100 heap
# snapshots of about 1 MB each, side by side with what go tool pprof needs
# for the same question (what grew across the series):
#
#   pprof first→last   go tool pprof -top -diff_base FIRST LAST, once: the
#                      least a person runs, and it reads two snapshots;
#   pprof every step   go tool pprof -top -diff_base for each consecutive
#                      pair, 99 runs: reading the whole series, as heapscope
#                      does.
#
# bench/cmd/genprofile writes the series into a temporary directory: one
# process at runtime.MemProfileRate=1, a snapshot of about 1 MB (many
# distinct 20–60-frame stacks), then 99 more, thirty walks apart (about
# a minute and a half). Then RUNS rounds run the commands in turn, each
# measured by bench/cmd/runstat (wall time, peak RSS, CPU time). The
# script prints the medians and the ratios, and checks the target:
# heapscope's median wall time at most 3 s. It exits 1 when it is missed.
#
#   bench/diagnose-vs-pprof.sh            # RUNS=3 SNAPSHOTS=100 SIZE=1MB
#   RUNS=5 bench/diagnose-vs-pprof.sh
#
# Nothing is left behind: the profiles and binaries live in a temporary
# directory removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-3}
snapshots=${SNAPSHOTS:-100}
size=${SIZE:-1MB}
target=3
work=$(mktemp -d "${TMPDIR:-/tmp}/diagnose-vs-pprof.XXXXXX")
trap 'rm -rf "$work"' EXIT

. bench/profile-tools.sh
build_profile_tools
machine
mkdir "$work/series"
echo "writing $snapshots heap snapshots of about $size …"
"$work/genprofile" -size "$size" -series "$snapshots" -o "$work/series/heap-%03d.pb.gz" 2>"$work/gen.log" || { cat "$work/gen.log" >&2; exit 2; }
files=("$work"/series/heap-*.pb.gz)
total_mb=$(du -cm "${files[@]}" | awk 'END { print $1 }')
echo "series: ${#files[@]} files, $total_mb MB, $(stat -c %s "${files[0]}") to $(stat -c %s "${files[-1]}") bytes each"
echo "runs per command: $runs, alternating"
echo

# every_step runs pprof on each consecutive pair and prints the summed
# wall and CPU time and the largest peak RSS, as runstat prints one run.
every_step() {
	local wall=0 cpu=0 rss=0 line
	for ((k = 1; k < ${#files[@]}; k++)); do
		line=$("$work/runstat" -- "$pprof" -top -diff_base "${files[k - 1]}" "${files[k]}")
		read -r w r c <<<"$line"
		wall=$(awk -v a="$wall" -v b="$w" 'BEGIN { print a + b }')
		cpu=$(awk -v a="$cpu" -v b="$c" 'BEGIN { print a + b }')
		rss=$(awk -v a="$rss" -v b="$r" 'BEGIN { print (b > a ? b : a) }')
	done
	echo "$wall $rss $cpu"
}

commands=(heapscope firstlast every)
run_one() {
	case $1 in
	heapscope) "$work/runstat" -- "$work/heapscope" diagnose "${files[@]}" ;;
	firstlast) "$work/runstat" -- "$pprof" -top -diff_base "${files[0]}" "${files[-1]}" ;;
	every) every_step ;;
	esac
}
declare -A wall rss cpu
alternate "$runs"
printf '%-44s %9s %9s %10s %18s\n' command "wall s" "CPU s" "RSS MiB" "its ÷ heapscope's"
for c in "${commands[@]}"; do
	case $c in
	heapscope) label="heapscope diagnose (${#files[@]} snapshots)" ;;
	firstlast) label="go tool pprof -top -diff_base first last" ;;
	every) label="go tool pprof -diff_base, every step (×$((${#files[@]} - 1)))" ;;
	esac
	ratio=""
	if [[ $c != heapscope ]]; then
		ratio=$(awk -v o="${wall[$c]}" -v h="${wall[heapscope]}" 'BEGIN { printf "%.2f×", o / h }')
	fi
	printf '%-44s %9.2f %9.2f %10.0f %18s\n' "$label" "${wall[$c]}" "${cpu[$c]}" "$(awk -v k="${rss[$c]}" 'BEGIN { print k / 1024 }')" "$ratio"
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if awk -v w="${wall[heapscope]}" -v t="$target" 'BEGIN { exit !(w <= t) }'; then
	echo "target met: heapscope diagnose ${wall[heapscope]} s ≤ $target s"
else
	echo "TARGET MISSED: heapscope diagnose ${wall[heapscope]} s > $target s"
	exit 1
fi
