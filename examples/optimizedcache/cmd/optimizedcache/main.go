// Command optimizedcache serves the optimized example service (see package optimizedcache) with
// pprof, Prometheus metrics and a health check. Run it with --help for its
// flags; each can also be set by the environment variable of the same name
// with the prefix OPTIMIZEDCACHE_ (--addr by OPTIMIZEDCACHE_ADDR).
package main

import "github.com/heapscope/heapscope/examples"

func main() {
	examples.RunAndExit("optimized")
}
