#!/usr/bin/env bash
# Builds the Grafana Pyroscope server that `make test-pyroscope` runs the
# exporter against, from the Go module proxy, into a cache directory outside
# the repository, and prints the binary's path. The server is AGPL-licensed:
# it is a test dependency only, never part of heapscope's module or binary.
#
# The server's go.mod carries replace directives (its api module as ./api,
# forks of memberlist and yaml.v3), so `go install module@version` refuses
# it: a throwaway module in the cache directory requires the server and
# repeats those replacements, with the api module at its release whose api/
# tree is the server tag's (api/v1.1.0 for v1.12.0). The server's own go.sum
# is copied in first: it pins pseudo-versions (a raft fork commit, the JFR
# parser) that the checksum database does not answer for here.
#
# Environment: PYROSCOPE_VERSION (v1.12.0, the newest the proxy served when
# this was written), PYROSCOPE_CACHE (default: $XDG_CACHE_HOME or ~/.cache,
# then heapscope/pyroscope-VERSION).
set -euo pipefail

version="${PYROSCOPE_VERSION:-v1.12.0}"
api_version="${PYROSCOPE_API_VERSION:-v1.1.0}"
cache="${PYROSCOPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/heapscope/pyroscope-$version}"
bin="$cache/bin/pyroscope"

if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache/build" "$cache/bin"
cd "$cache/build"
cat >go.mod <<EOF
module heapscope.test/pyroscope-server

go 1.22

require (
	github.com/grafana/pyroscope $version
	github.com/grafana/pyroscope/api $api_version
)

replace (
	github.com/hashicorp/memberlist => github.com/grafana/memberlist v0.3.1-0.20220708130638-bd88e10a3d91
	gopkg.in/yaml.v3 => github.com/colega/go-yaml-yaml v0.0.0-20220720105220-255a8d16d094
)
EOF
# The working directory's own go.work, if any, must not apply.
export GOWORK=off GOFLAGS=-mod=mod
src=$(go mod download -json "github.com/grafana/pyroscope@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
cp "$src/go.sum" go.sum
chmod u+w go.sum
echo "pyroscope-server: resolving github.com/grafana/pyroscope@$version" >&2
go get "github.com/grafana/pyroscope/cmd/pyroscope@$version" >&2
echo "pyroscope-server: building cmd/pyroscope (several minutes on 2 cores)" >&2
start=$(date +%s)
CGO_ENABLED=0 go build -trimpath -o "$bin.tmp" github.com/grafana/pyroscope/cmd/pyroscope >&2
mv "$bin.tmp" "$bin"
echo "pyroscope-server: built in $(( $(date +%s) - start ))s" >&2
echo "$bin"
