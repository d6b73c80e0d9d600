// Command tunedkv serves the kv-tuned example service (see package tunedkv) with
// pprof, Prometheus metrics and a health check. Run it with --help for its
// flags; each can also be set by the environment variable of the same name
// with the prefix TUNEDKV_ (--addr by TUNEDKV_ADDR).
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
	code := examples.Main(ctx, "kv-tuned", os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}
