// Command naivekv serves the kv-naive example service (see package naivekv) with
// pprof, Prometheus metrics and a health check. Run it with --help for its
// flags; each can also be set by the environment variable of the same name
// with the prefix NAIVEKV_ (--addr by NAIVEKV_ADDR).
package main

import "github.com/heapscope/heapscope/examples"

func main() {
	examples.RunAndExit("kv-naive")
}
