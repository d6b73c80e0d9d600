// Command gen records the execution trace kept in testdata: a program that
// allocates for a short while with a small GOGC, so that the trace holds
// several GC cycles, and calls runtime.ReadMemStats once, for a pause that
// is not the GC's.
//
//	go run ./internal/gen -o testdata/alloc.trace
//
// The traces of older formats come from the same program under older
// toolchains, run from a copy in a module of its own with a go 1.21 line:
//
//	GOTOOLCHAIN=go1.21.13 go run . -o alloc-go1.21.13.trace
//	GOTOOLCHAIN=go1.23.12 go run . -o alloc-go1.23.12.trace
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/trace"
	"time"
)

var sink [][]byte

func main() {
	out := flag.String("o", "testdata/alloc.trace", "file to write")
	d := flag.Duration("d", 150*time.Millisecond, "how long to trace")
	flag.Parse()
	if err := record(*out, *d); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func record(out string, d time.Duration) error {
	debug.SetGCPercent(25)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := trace.Start(f); err != nil {
		return err
	}
	deadline := time.Now().Add(d)
	for i := 0; time.Now().Before(deadline); i++ {
		sink = append(sink, make([]byte, 64<<10))
		if len(sink) > 64 {
			sink = sink[:0]
		}
		if i == 100 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
		}
	}
	trace.Stop()
	return f.Close()
}
