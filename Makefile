# heapscope — make targets. `make help` lists them.

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
FUZZTIME  ?= 30s

.PHONY: help build install need-chromium test test-short test-allocbench test-browser test-pyroscope lint fmt bench fuzz demo clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/heapscope (no cgo)
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o bin/heapscope ./cmd/heapscope

install: ## install heapscope into GOBIN
	CGO_ENABLED=0 $(GO) install -ldflags "$(LDFLAGS)" ./cmd/heapscope

test: need-chromium ## run the whole test suite (race detector on), after lint (scripts/test.sh installs what it needs first)
	$(GO) mod download
	$(MAKE) lint
	$(GO) test -race -count=1 -timeout 30m ./...
	$(MAKE) test-allocbench
	$(MAKE) test-browser

test-short: ## the suite without the race detector
	$(GO) test -count=1 ./...

test-allocbench: ## the allocator lab against real Go toolchains from the module proxy (a minute or two)
	$(GO) test -count=1 -tags allocbench ./internal/allocbench/

test-pyroscope: ## the Pyroscope exporter against a real Pyroscope server on 127.0.0.1, built from the Go module proxy into ~/.cache/heapscope (minutes the first time)
	PYROSCOPE_BIN="$$(bash scripts/pyroscope-server.sh)" && export PYROSCOPE_BIN && \
	  $(GO) test -count=1 -tags pyroscope ./internal/export/pyroscope/

need-chromium:
	@[ -n "$$CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { echo "the browser tests need Chromium: apt-get install chromium (or set CHROMIUM=/path/to/chrome; scripts/test.sh installs it)"; exit 1; }

test-browser: need-chromium ## the headless Chromium tests, a module of their own (needs Debian's chromium)
	cd browsertests && $(GO) mod download && $(GO) vet ./... && $(GO) mod tidy -diff && $(GO) test -count=1 ./...

lint: ## gofmt, import groups, go vet, go mod tidy check
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@$(GO) run ./internal/tools/importgroups -local github.com/heapscope/heapscope \
	  $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')
	$(GO) vet ./...
	$(GO) vet -tags allocbench ./internal/allocbench/
	$(GO) vet -tags pyroscope ./internal/export/pyroscope/
	$(GO) vet -tags accuracy ./cmd/heapscope/
	$(GO) mod tidy -diff

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')

bench: ## run the Go benchmarks once
	$(GO) test -run '^$$' -bench . -benchmem ./...

fuzz: ## run each fuzz target for FUZZTIME
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

demo: ## profile the bundled leaky example
	$(GO) run ./cmd/heapscope demo

clean: ## remove build output and demo runs
	rm -rf bin heapscope-runs
