#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine with Go: installs what
# the tests need when run as root (or names the one apt-get line to run and
# stops), downloads the Go modules, then runs `make test`. CI runs this same
# script (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

need_go="1.26"
if ! command -v go >/dev/null 2>&1; then
  export PATH="$PATH:/usr/local/go/bin"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "test.sh: no go command: install Go $need_go or newer (https://go.dev/doc/install)" >&2
  exit 2
fi
have=$(go env GOVERSION | sed 's/^go//')
case "$have" in
  "$need_go"*|1.2[7-9]*|1.[3-9]*) ;;
  *) echo "test.sh: the tests need Go $need_go or newer, found $have" >&2; exit 2 ;;
esac

# Debian packages: make and git drive the suite, gcc is the race
# detector's, curl is in the README's commands (which the suite runs),
# chromium runs the browser tests (browsertests/), postgresql gives the
# tests' own PostgreSQL clusters their initdb and postgres (Debian keeps
# them off PATH, under /usr/lib/postgresql/VERSION/bin).
pkgs=()
command -v make >/dev/null 2>&1 || pkgs+=(make)
command -v git >/dev/null 2>&1 || pkgs+=(git)
command -v curl >/dev/null 2>&1 || pkgs+=(curl)
command -v gcc >/dev/null 2>&1 || pkgs+=(gcc libc6-dev)
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  pkgs+=(chromium)
fi
have_postgres=
for bin in /usr/lib/postgresql/*/bin; do
  if [ -x "$bin/initdb" ] && [ -x "$bin/postgres" ]; then have_postgres=1; fi
done
[ -n "$have_postgres" ] || command -v initdb >/dev/null 2>&1 || pkgs+=(postgresql)
if [ ${#pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "test.sh: the tests need ${pkgs[*]}: run as root, or first: sudo apt-get install -y ${pkgs[*]}" >&2
    exit 2
  fi
  echo "test.sh: installing ${pkgs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}"
fi

go mod download
(cd browsertests && go mod download)
# versitygw, the tests' own S3 server, at the version they name
# (internal/testserver/s3test), into GOBIN or GOPATH/bin where they find it.
go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
exec make test
