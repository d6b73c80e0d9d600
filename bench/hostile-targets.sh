#!/usr/bin/env bash
# hostile-targets.sh: what a hostile target costs heapscope, in peak RSS
# and wall time. bench/cmd/hostile serves a pprof whose heap profile is
#
#   bomb       a gzip bomb: 4 MB of gzip that inflate to 4 GiB of zeros;
#   samples    a valid heap profile, one sample repeated: 15 MiB of
#              protobuf in 50 KB of gzip, which profile.Parse makes ten
#              times larger;
#   endless    a body that never ends;
#   silent     an answer that never comes;
#
# (its other endpoints are the real net/http/pprof of its process), and
# `heapscope profile` runs a 1 s window against each with a 5 s timeout;
# then `heapscope diagnose` reads the first two as files, and a run
# directory whose CPU profile is the bomb. Each command
# runs once, measured by bench/cmd/runstat (wall time, peak RSS). The
# target: every capture's (profile's) peak RSS at most twice the
# decoded-size limit of 256 MiB (pprofx.DefaultMaxDecoded), the garbage
# collector's own headroom over what is live. It exits 1 when it is
# missed. diagnose reads files it is given: beyond the limit it refuses
# them for almost nothing, within it its checks take what they need,
# about four times the limit for a profile just within it.
#
#   bench/hostile-targets.sh              # this tree
#   BASE=main bench/hostile-targets.sh    # and the tree at BASE beside it
#
# The tree at BASE is taken with git archive, built in the temporary
# directory, and removed with it on exit. Measured against a tree before
# the limits, `profile` against the bomb peaks at about 1 GB, and against
# samples at about 2 GB.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${BASE:-}
limit_mib=512
work=$(mktemp -d "${TMPDIR:-/tmp}/hostile-targets.XXXXXX")
trap 'rm -rf "$work"' EXIT

. bench/profile-tools.sh
build_profile_tools
go build -o "$work/hostile" ./bench/cmd/hostile
trees=(this)
if [[ -n $base ]]; then
	mkdir "$work/base"
	git archive "$base" | tar -x -C "$work/base"
	(cd "$work/base" && go build -o "$work/heapscope-base" ./cmd/heapscope)
	trees=(base this)
fi
machine
"$work/hostile" -mode bomb -o "$work/bomb.pb.gz"
"$work/hostile" -mode samples -size $((15 << 20)) -o "$work/samples.pb.gz"
echo "bomb.pb.gz $(stat -c %s "$work/bomb.pb.gz") bytes, samples.pb.gz $(stat -c %s "$work/samples.pb.gz") bytes"
echo

bin() {
	if [[ $1 == base ]]; then echo "$work/heapscope-base"; else echo "$work/heapscope"; fi
}

# profile_against TREE MODE [SIZE] runs heapscope profile of TREE against
# a hostile server of MODE and prints runstat's line and the last line of
# heapscope's standard error.
profile_against() {
	local tree=$1 mode=$2 size=${3:-0} url line
	coproc SERVER { "$work/hostile" -mode "$mode" -size "$size"; }
	read -r url <&"${SERVER[0]}"
	line=$("$work/runstat" -- "$(bin "$tree")" profile "$url" --duration 1s --timeout 5s --out "$work/runs" 2>"$work/stderr") || true
	exec {SERVER[1]}>&-
	wait "$SERVER_PID" 2>/dev/null || true
	echo "$line|$(said)"
}

# said is the last line heapscope wrote to its standard error, shortened.
said() {
	local last
	last=$(tail -n 1 "$work/stderr" | cut -c 1-110)
	echo "${last:--}"
}

diagnose_file() {
	local line
	line=$("$work/runstat" -- "$(bin "$1")" diagnose "$work/$2" 2>"$work/stderr") || true
	echo "$line|$(said)"
}

# A run directory of a target whose heap profile is sound (one sample
# repeated over 1 MiB), its CPU profile then replaced by the bomb.
coproc SERVER { "$work/hostile" -mode samples -size $((1 << 20)); }
read -r url <&"${SERVER[0]}"
"$work/heapscope" profile "$url" --duration 1s --out "$work/rundir" >/dev/null 2>&1 || true
exec {SERVER[1]}>&-
wait "$SERVER_PID" 2>/dev/null || true
rundir=$(find "$work/rundir" -mindepth 1 -maxdepth 1 -type d | head -n 1)
cp "$work/bomb.pb.gz" "$rundir/profiles/cpu.pb.gz"

printf '%-24s %-5s %8s %9s  %s\n' case tree "wall s" "RSS MiB" "what heapscope said"
worst=0
for c in "profile bomb" "profile samples" "profile endless" "profile silent" "diagnose bomb.pb.gz" "diagnose samples.pb.gz" "diagnose rundir"; do
	read -r cmd mode <<<"$c"
	for tree in "${trees[@]}"; do
		if [[ $cmd == profile ]]; then
			size=0
			[[ $mode == samples ]] && size=$((15 << 20))
			out=$(profile_against "$tree" "$mode" "$size")
		elif [[ $mode == rundir ]]; then
			out=$(diagnose_file "$tree" "${rundir#"$work"/}")
		else
			out=$(diagnose_file "$tree" "$mode")
		fi
		read -r wall rss _ <<<"${out%%|*}"
		mib=$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')
		printf '%-24s %-5s %8.2f %9s  %s\n' "$c" "$tree" "$wall" "$mib" "${out#*|}"
		if [[ $tree == this && $cmd == profile ]] && ((mib > worst)); then
			worst=$mib
		fi
	done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if ((worst <= limit_mib)); then
	echo "target met: every profile's peak RSS ≤ $limit_mib MiB (worst $worst MiB)"
else
	echo "TARGET MISSED: a profile peaked at $worst MiB > $limit_mib MiB"
	exit 1
fi
