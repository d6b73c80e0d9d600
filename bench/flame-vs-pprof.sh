#!/usr/bin/env bash
# flame-vs-pprof.sh: `heapscope flame … -o x.svg` and `heapscope top` side
# by side with `go tool pprof -top`, on real heap profiles of about 1, 10
# and 50 MB.
#
# For each size, bench/cmd/genprofile writes a heap profile into a
# temporary directory (many distinct 20–60-frame stacks recorded at
# runtime.MemProfileRate=1; the 50 MB one takes about a minute and 3 GiB).
# Then RUNS rounds run the three commands one after the other, rotating
# their order, so they share the machine's conditions; each run is measured
# by bench/cmd/runstat (wall time, peak RSS, CPU time). The script prints
# the medians and the ratios against pprof, and checks the targets on the
# 10 MB and 50 MB files: heapscope's median wall time at least 5× shorter
# than pprof -top's, and its peak RSS at most 0.5× pprof's. It exits with
# status 1 when a target is missed.
#
#   bench/flame-vs-pprof.sh                       # RUNS=5 SIZES="1MB 10MB 50MB"
#   RUNS=3 SIZES="10MB" bench/flame-vs-pprof.sh
#
# Nothing is left behind: the profiles and binaries live in a temporary
# directory removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-5}
sizes=${SIZES:-"1MB 10MB 50MB"}
work=$(mktemp -d "${TMPDIR:-/tmp}/flame-vs-pprof.XXXXXX")
trap 'rm -rf "$work"' EXIT

. bench/profile-tools.sh
build_profile_tools
machine
echo "runs per command: $runs, alternating"
echo

commands=(pprof flame top)
run_one() { # tool profile
	case $1 in
	pprof) "$work/runstat" -- "$pprof" -top "$2" ;;
	flame) "$work/runstat" -- "$work/heapscope" flame "$2" -o "$work/out.svg" ;;
	top) "$work/runstat" -- "$work/heapscope" top "$2" ;;
	esac
}

declare -A wall rss cpu
missed=0
printf '%-6s %8s  %-26s %9s %9s %10s %9s %9s\n' size "file MB" command "wall s" "CPU s" "RSS MiB" speed-up "RSS ratio"
for size in $sizes; do
	prof="$work/heap-$size.pb.gz"
	"$work/genprofile" -size "$size" -o "$prof" 2>"$work/gen.log" || { cat "$work/gen.log" >&2; exit 2; }
	file_mb=$(awk -v b="$(stat -c %s "$prof")" 'BEGIN { printf "%.1f", b / 1048576 }')
	alternate "$runs" "$prof"
	for c in "${commands[@]}"; do
		case $c in
		pprof) label="go tool pprof -top" ;;
		flame) label="heapscope flame -o x.svg" ;;
		top) label="heapscope top" ;;
		esac
		speed=$(awk -v p="${wall[pprof]}" -v w="${wall[$c]}" 'BEGIN { printf "%.1f×", p / w }')
		ratio=$(awk -v p="${rss[pprof]}" -v r="${rss[$c]}" 'BEGIN { printf "%.2f×", r / p }')
		mark=""
		if [[ $c != pprof && $size != 1MB ]]; then
			if awk -v p="${wall[pprof]}" -v w="${wall[$c]}" -v pr="${rss[pprof]}" -v r="${rss[$c]}" \
				'BEGIN { exit !(p / w >= 5 && r / pr <= 0.5) }'; then
				mark="  target met"
			else
				mark="  TARGET MISSED"
				missed=1
			fi
		fi
		if [[ $c == pprof ]]; then speed="" ratio=""; fi
		printf '%-6s %8s  %-26s %9.2f %9.2f %10.0f %9s %9s%s\n' "$size" "$file_mb" "$label" \
			"${wall[$c]}" "${cpu[$c]}" "$(awk -v k="${rss[$c]}" 'BEGIN { print k / 1024 }')" "$speed" "$ratio" "$mark"
	done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "speed-up: pprof's median wall time over the command's; RSS ratio: the command's median peak RSS over pprof's"
echo "targets (10 MB and 50 MB): speed-up ≥ 5×, RSS ratio ≤ 0.5×"
exit "$missed"
