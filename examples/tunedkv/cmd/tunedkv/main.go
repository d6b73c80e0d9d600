// Command tunedkv serves the kv-tuned example service (see package tunedkv) with
// pprof, Prometheus metrics and a health check. Run it with --help for its
// flags; each can also be set by the environment variable of the same name
// with the prefix TUNEDKV_ (--addr by TUNEDKV_ADDR).
package main

import "github.com/heapscope/heapscope/examples"

func main() {
	examples.RunAndExit("kv-tuned")
}
