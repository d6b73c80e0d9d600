// Command leakycache serves the leaky example service (see package leakycache) with
// pprof, Prometheus metrics and a health check. Run it with --help for its
// flags; each can also be set by the environment variable of the same name
// with the prefix LEAKYCACHE_ (--addr by LEAKYCACHE_ADDR).
package main

import "github.com/heapscope/heapscope/examples"

func main() {
	examples.RunAndExit("leaky")
}
