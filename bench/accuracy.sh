#!/usr/bin/env bash
# accuracy.sh: runs heapscope's end-to-end verdict cases — the bundled
# examples started normally and profiled with the README's commands, five
# runs of each fixed twin, a server whose pool fills once as its load
# begins, a public module at a release with a known leak and at the
# release that fixed it, a service making each catalogued misuse in two
# shapes of code, the fixed twin of each misuse — and writes the accuracy
# table of
# docs/findings.md from what each case found, missed and raised falsely.
# Run it after a change to the diagnosis and commit the table with it: a
# change that trades a true finding for a false alarm shows in the diff.
#
#   bench/accuracy.sh          # rewrites the table in docs/findings.md
#   bench/accuracy.sh -n       # prints it only
#
# It takes about ten minutes (the cases wait on their windows' clocks),
# and exits 1 when a case failed (the table is written all the same).
set -uo pipefail
cd "$(dirname "$0")/.."

out=$(mktemp "${TMPDIR:-/tmp}/accuracy.XXXXXX")
trap 'rm -f "$out"' EXIT
HEAPSCOPE_ACCURACY=$out go test -tags accuracy ./cmd/heapscope -count=1 -timeout 30m \
	-run 'TestProfile_VerdictsAtDefaultSettings|TestProfile_RealModuleAtBuggyAndFixedVersions|TestProfile_PoolThatFillsOnceIsWarmUp|TestProfile_MisusesOnRealRuns|TestProfile_ModuleMisusesOnRealRuns'
status=$?
if [[ ${1:-} == -n ]]; then
	go run ./bench/cmd/accuracy -in "$out" || exit 2
else
	go run ./bench/cmd/accuracy -in "$out" -w docs/findings.md || exit 2
	echo "wrote the accuracy table of docs/findings.md"
fi
exit $((status != 0))
