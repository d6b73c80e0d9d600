#!/usr/bin/env bash
# Records the run directories the store's tests ingest, with heapscope
# itself against the bundled example services on 127.0.0.1, and keeps
# their result.json (the store reads nothing else of a run):
#
#   testdata/runs/leaky/    a complete local run of the leaky cache under
#                           load, in a memory cgroup of its own (v1, 256 MiB)
#                           when this runs as root on a host that has one
#   testdata/runs/partial/  a partial run: the optimized cache killed in
#                           the middle of the window
#
# From internal/store/storetest: ./testdata/gen.sh (about 15 s). heapscope is built
# with -trimpath, so the results hold no directory of this machine.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
cgroup=/sys/fs/cgroup/memory/heapscope-store-fixture
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -d "$cgroup" ] && rmdir "$cgroup" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -trimpath -o "$tmp/heapscope" ../../../cmd/heapscope
load='GET /process?id=tenant-42:user-{rand:100000}:locale-en-GB:plan-pro'

# serve NAME: starts an example service (in the fixture cgroup when there
# is one), sets pid and url.
serve() {
  : >"$tmp/$1.log"
  if [ -d "$cgroup" ]; then
    sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cgroup" \
      "$tmp/heapscope" serve-example "$1" --addr 127.0.0.1:0 2>"$tmp/$1.log" &
  else
    "$tmp/heapscope" serve-example "$1" --addr 127.0.0.1:0 2>"$tmp/$1.log" &
  fi
  pid=$!
  pids+=("$pid")
  for _ in $(seq 50); do
    url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$tmp/$1.log")
    [ -n "$url" ] && return
    sleep 0.1
  done
  echo "gen.sh: $1 did not start: $(cat "$tmp/$1.log")" >&2
  exit 1
}

# keep NAME: copies the one run directory under $tmp/NAME to testdata/runs/NAME.
keep() {
  mkdir -p "testdata/runs/$1"
  cp "$tmp/$1"/*/result.json "testdata/runs/$1/result.json"
}

if [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/memory ] && mkdir -p "$cgroup" 2>/dev/null; then
  echo $((256 << 20)) >"$cgroup/memory.limit_in_bytes"
fi

serve leaky
"$tmp/heapscope" profile "$url" --load "$load" --rate 400 --warmup 1s -d 4s --out "$tmp/leaky" >/dev/null
keep leaky

serve optimized
( sleep 3; kill "$pid" ) &
"$tmp/heapscope" profile "$url" --load "$load" --rate 400 --warmup 1s -d 4s --until-confident=false \
  --out "$tmp/partial" >/dev/null || [ $? = 3 ]
keep partial
