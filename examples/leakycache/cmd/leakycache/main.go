// Command leakycache serves the leaky example service (see package leakycache) with
// pprof, Prometheus metrics and a health check. Run it with --help for its
// flags; each can also be set by the environment variable of the same name
// with the prefix LEAKYCACHE_ (--addr by LEAKYCACHE_ADDR).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/heapscope/heapscope/examples"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := examples.Main(ctx, "leaky", os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}
