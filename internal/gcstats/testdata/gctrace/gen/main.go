// Command gctracegen makes a Go runtime print every kind of line that
// heapscope's gctrace parser reads, when run with
// GODEBUG=gctrace=1,scavtrace=1: background and forced GC cycles, scavenger
// lines (background and forced), a cycle that checks for goroutine leaks
// (Go 1.26 built with GOEXPERIMENT=goroutineleakprofile), and, unless -quick,
// the "GC forced" line of a cycle started by the runtime after two idle
// minutes. record.sh runs it under several toolchains.
package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"time"
)

var sink [][]byte

func main() {
	quick := flag.Bool("quick", false, "do not wait for the runtime's periodic forced GC")
	flag.Parse()

	// Grow a live set, then drop it, so that heap sizes and goals move.
	for round := 0; round < 3; round++ {
		for i := 0; i < 4000; i++ {
			sink = append(sink, make([]byte, 8<<10))
			_ = make([]byte, 32<<10) // garbage
		}
		runtime.GC() // a "(forced)" cycle
		sink = nil
		for i := 0; i < 20000; i++ {
			_ = make([]byte, 16<<10)
		}
	}
	debug.FreeOSMemory() // a forced cycle and a forced scavenge

	// A goroutine blocked forever on a channel nobody else can reach:
	// the goroutine leak profile's GC cycle finds it.
	if p := pprof.Lookup("goroutineleak"); p != nil {
		go func() { <-make(chan int) }()
		time.Sleep(10 * time.Millisecond)
		_ = p.WriteTo(io.Discard, 0)
	}

	if !*quick {
		// The runtime forces a GC when none has run for two minutes and
		// prints "GC forced" before it.
		start := numGC()
		deadline := time.Now().Add(130 * time.Second)
		for numGC() == start && time.Now().Before(deadline) {
			time.Sleep(time.Second)
		}
	}
	fmt.Println("done", runtime.Version())
}

func numGC() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumGC
}
