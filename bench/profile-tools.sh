# profile-tools.sh: what the scripts that measure heapscope against go tool
# pprof share; sourced, not run. It expects $work, a temporary directory.
#
#   build_profile_tools   builds heapscope, genprofile and runstat into
#                         $work and sets $pprof to the pprof binary itself,
#                         so the go command's start-up is not counted;
#   median                prints the median of the numbers on stdin;
#   machine               prints the machine, the Go version and the load;
#   alternate RUNS ARGS…  runs run_one (the caller's) for each of the
#                         commands in the array $commands, RUNS rounds,
#                         their order rotating so they share the machine's
#                         conditions, with ARGS; then sets the associative
#                         arrays wall, rss and cpu to each command's medians
#                         of runstat's figures.

build_profile_tools() {
	go build -o "$work/heapscope" ./cmd/heapscope
	go build -o "$work/genprofile" ./bench/cmd/genprofile
	go build -o "$work/runstat" ./bench/cmd/runstat
	pprof=$(go tool -n pprof)
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

machine() {
	local model mem
	model=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
	mem=$(awk '/MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)
	echo "machine: $(nproc) CPUs ($model), $mem GiB; $(go version)"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
}

alternate() {
	local runs=$1 i j c
	shift
	for c in "${commands[@]}"; do : >"$work/$c.txt"; done
	for ((i = 0; i < runs; i++)); do
		for ((j = 0; j < ${#commands[@]}; j++)); do
			c=${commands[$(((i + j) % ${#commands[@]}))]}
			run_one "$c" "$@" >>"$work/$c.txt"
		done
	done
	wall=() rss=() cpu=()
	for c in "${commands[@]}"; do
		wall[$c]=$(awk '{ print $1 }' "$work/$c.txt" | median)
		rss[$c]=$(awk '{ print $2 }' "$work/$c.txt" | median)
		cpu[$c]=$(awk '{ print $3 }' "$work/$c.txt" | median)
	done
}
