// Command optimizedcache serves the optimized example service (see package optimizedcache) with
// pprof, Prometheus metrics and a health check. Run it with --help for its
// flags; each can also be set by the environment variable of the same name
// with the prefix OPTIMIZEDCACHE_ (--addr by OPTIMIZEDCACHE_ADDR).
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
	code := examples.Main(ctx, "optimized", os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}
