// Command child is the program allocbench runs under each Go toolchain: it
// allocates one pattern, forces a GC, prints the runtime's heap figures as
// one JSON line on stdout, then waits for stdin to close so that its parent
// can read its /proc files while the pattern is still live.
//
// allocbench embeds this file and builds it in a module of its own whose go
// line is old enough for every toolchain it is asked to use, so it must keep
// to the Go 1.21 language and the standard library.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
)

// pelem and nelem are the 64-byte elements of the containers: one holds
// pointers, the other not.
type pelem struct{ p [8]*int }

type nelem [64]byte

const elemSize = 64

// rounds is how many times a short-lived pattern replaces its live set.
const rounds = 4

// figures are what the child reports.
type figures struct {
	GoVersion    string `json:"go_version"`
	HeapAlloc    uint64 `json:"heap_alloc"`
	HeapInuse    uint64 `json:"heap_inuse"`
	HeapSys      uint64 `json:"heap_sys"`
	HeapReleased uint64 `json:"heap_released"`
	Sys          uint64 `json:"sys"`
	NumGC        uint32 `json:"num_gc"`
}

// spec is one allocation pattern.
type spec struct {
	objBytes  int    // size of each object
	ptr       bool   // elements hold pointers
	container string // slice, chan or map
	transient bool   // objects die young: the live set is replaced, rounds times
	sparse    bool   // only the first 1/16 of each object is written
	liveBytes int    // bytes kept live at the end
}

var (
	sink []interface{}
	tgt  = new(int)
)

func main() {
	var s spec
	flag.IntVar(&s.objBytes, "object", 4<<20, "object size in bytes")
	flag.BoolVar(&s.ptr, "ptr", false, "elements hold pointers")
	flag.StringVar(&s.container, "container", "slice", "slice, chan or map")
	flag.BoolVar(&s.transient, "transient", false, "short-lived objects")
	flag.BoolVar(&s.sparse, "sparse", false, "write 1/16 of each object")
	flag.IntVar(&s.liveBytes, "live", 64<<20, "bytes live at the end")
	flag.Parse()
	if s.objBytes < elemSize || s.liveBytes < s.objBytes {
		fmt.Fprintln(os.Stderr, "child: -object must be at least 64 and at most -live")
		os.Exit(2)
	}
	if s.container != "slice" && s.container != "chan" && s.container != "map" {
		fmt.Fprintf(os.Stderr, "child: unknown container %q\n", s.container)
		os.Exit(2)
	}
	// No GC cycle runs unless the pattern asks for one: a cycle scans
	// every pointer-holding object, and on kernels that do not map the
	// shared zero page on a read fault the scan alone makes untouched
	// pages resident, hiding what the allocator itself wrote.
	debug.SetGCPercent(-1)
	live := s.liveBytes / s.objBytes
	sink = make([]interface{}, live)
	if !s.transient {
		for i := 0; i < live; i++ {
			sink[i] = alloc(&s)
		}
	} else {
		// Short-lived objects: each round replaces the live set, and a
		// GC between rounds frees the previous one for reuse.
		for r := 0; r < rounds; r++ {
			for i := 0; i < live; i++ {
				sink[i] = alloc(&s)
			}
			runtime.GC()
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out, _ := json.Marshal(figures{
		GoVersion:    runtime.Version(),
		HeapAlloc:    ms.HeapAlloc,
		HeapInuse:    ms.HeapInuse,
		HeapSys:      ms.HeapSys,
		HeapReleased: ms.HeapReleased,
		Sys:          ms.Sys,
		NumGC:        ms.NumGC,
	})
	fmt.Printf("%s\n", out)
	// Stay alive, pattern live, until the parent has measured.
	io.Copy(io.Discard, os.Stdin)
	runtime.KeepAlive(sink)
}

// alloc makes one object of the pattern and writes what it asks.
func alloc(s *spec) interface{} {
	n := s.objBytes / elemSize
	w := n
	if s.sparse {
		w = n / 16
		if w == 0 {
			w = 1
		}
	}
	switch s.container {
	case "slice":
		if s.ptr {
			v := make([]pelem, n)
			for i := 0; i < w; i++ {
				v[i].p[0] = tgt
			}
			return v
		}
		v := make([]nelem, n)
		for i := 0; i < w; i++ {
			v[i][0] = 1
		}
		return v
	case "chan":
		if s.ptr {
			c := make(chan pelem, n)
			var e pelem
			e.p[0] = tgt
			for i := 0; i < w; i++ {
				c <- e
			}
			return c
		}
		c := make(chan nelem, n)
		var e nelem
		e[0] = 1
		for i := 0; i < w; i++ {
			c <- e
		}
		return c
	default:
		// A map entry costs about twice its key and value; size maps
		// so that a map takes about objBytes.
		n /= 2
		w = n
		if s.sparse {
			w = n / 16
		}
		if s.ptr {
			m := make(map[int64]pelem, n)
			var e pelem
			e.p[0] = tgt
			for i := 0; i < w; i++ {
				m[int64(i)] = e
			}
			return m
		}
		m := make(map[int64]nelem, n)
		var e nelem
		e[0] = 1
		for i := 0; i < w; i++ {
			m[int64(i)] = e
		}
		return m
	}
}
