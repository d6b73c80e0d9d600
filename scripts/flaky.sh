#!/usr/bin/env bash
# Runs the test suite several times over with a CPU hog pinning every core,
# to find the tests that depend on the machine's speed: a suite to trust
# passes every run.
#
#   scripts/flaky.sh [-n RUNS] [PACKAGE...]
#
# RUNS is 5 unless given. With no packages it runs the whole suite as
# `make test` does (go test -race over ./..., then the browser tests); with
# packages, go test -race over those alone (for instance
# `scripts/flaky.sh -n 1 ./internal/watch/ ./internal/run/`). Each run's
# output is kept in a log under FLAKY_LOGS (a fresh temporary directory
# unless set); the summary names the failing tests of each run and the
# seeds the failing randomised tests logged (give one back with
# HEAPSCOPE_TEST_SEED=N). FLAKY_HOGS sets the number of hog processes
# (one per CPU unless set). It exits 1 when any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null 2>&1; then
  export PATH="$PATH:/usr/local/go/bin"
fi

runs=5
if [[ "${1:-}" == "-n" ]]; then
  runs="${2:?flaky.sh: -n needs a number of runs}"
  shift 2
fi
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "flaky.sh: -n $runs: want a positive number of runs" >&2
  exit 2
fi
pkgs=("$@")
logs="${FLAKY_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/flaky.XXXXXX")}"
mkdir -p "$logs"
hogs="${FLAKY_HOGS:-$(nproc)}"

# The hog: one busy process per CPU, stopped by PID however this ends.
hog_pids=()
stop_hogs() {
  for pid in "${hog_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${hog_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  hog_pids=()
}
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT TERM
for _ in $(seq "$hogs"); do
  yes >/dev/null &
  hog_pids+=("$!")
done
echo "flaky.sh: $runs runs of ${pkgs[*]:-the whole suite}, beside $hogs CPU hogs (PIDs ${hog_pids[*]}); logs in $logs"

# suite runs the tests once, its output to $1.
suite() {
  local log="$1"
  if [[ ${#pkgs[@]} -gt 0 ]]; then
    go test -race -count=1 -timeout 20m "${pkgs[@]}" >"$log" 2>&1
    return
  fi
  local rc=0
  go test -race -count=1 -timeout 20m ./... >"$log" 2>&1 || rc=$?
  make --no-print-directory test-browser >>"$log" 2>&1 || rc=$?
  return "$rc"
}

failed=0
for i in $(seq "$runs"); do
  log="$logs/run-$i.log"
  start=$SECONDS
  if suite "$log"; then
    echo "run $i/$runs: pass ($((SECONDS - start)) s)"
    continue
  fi
  failed=$((failed + 1))
  echo "run $i/$runs: FAIL ($((SECONDS - start)) s), log $log"
  # The failing tests, subtests indented under them, and the packages.
  grep -E '^[[:space:]]*--- FAIL: |^FAIL[[:space:]]+[^[:space:]]+|^panic: |timed out after' "$log" | sed 's/^/    /' || true
  grep -oE 'seed [0-9]+: run again with HEAPSCOPE_TEST_SEED=[0-9]+' "$log" | sed 's/^/    /' || true
done
echo "flaky.sh: $((runs - failed)) of $runs runs passed"
[[ $failed -eq 0 ]]
