#!/bin/sh
# record.sh regenerates the recorded gctrace logs under
# internal/gcstats/testdata/gctrace/: it builds gctracegen (this directory,
# a module whose go line every toolchain accepts) with each toolchain,
# fetched from the module proxy through GOTOOLCHAIN, and keeps the stderr
# of a run under GODEBUG=gctrace=1,scavtrace=1 as goX.YY.txt.
#
#   ./record.sh                      # every version below, ~2.5 minutes
#   ./record.sh go1.22.12 go1.26.8   # some versions
#   QUICK=1 ./record.sh              # skip the two idle minutes that the
#                                    # runtime's "GC forced" line needs
#
# The runs go in parallel (they mostly sleep). Go 1.26 is built with
# GOEXPERIMENT=goroutineleakprofile, so its log has a cycle "(checking for
# goroutine leaks)".
set -eu
cd "$(dirname "$0")"
out=..
versions=${*:-go1.19.13 go1.20.14 go1.21.13 go1.22.12 go1.23.12 go1.24.3 go1.25.0 go1.26.8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=
[ -n "${QUICK:-}" ] && args=-quick

for v in $versions; do
	exp=
	case $v in go1.2[6-9]*|go1.[3-9]*) exp=goroutineleakprofile ;; esac
	echo "build with $v" >&2
	GOTOOLCHAIN=$v GOEXPERIMENT=$exp GOFLAGS=-mod=mod go build -o "$tmp/gen-$v" . || {
		echo "skip $v: cannot build with it" >&2
		continue
	}
done

pids=
for v in $versions; do
	[ -x "$tmp/gen-$v" ] || continue
	minor=$(echo "$v" | sed -E 's/^go([0-9]+\.[0-9]+).*/go\1/')
	GODEBUG=gctrace=1,scavtrace=1 "$tmp/gen-$v" $args >/dev/null 2>"$out/$minor.txt" &
	pids="$pids $!"
done
for p in $pids; do wait "$p"; done
ls -l "$out"/go*.txt >&2
