// Command gen writes the heap profiles under internal/pprofx/testdata.
//
// It runs known allocation workloads in its own process with
// runtime.MemProfileRate set to 1, so every allocation is recorded and
// the figures are exact, and takes two heap profiles through
// runtime/pprof around an allocation burst:
//
//	heap-start.pb.gz  after the warm-up, wide-tree and inlined workloads
//	heap-end.pb.gz    after the burst as well
//	sites.json        where each workload allocates (function, file, line)
//	                  and how much, for the tests to check against
//
// Run it through go generate in internal/pprofx (it builds with -trimpath so
// the profiles hold module-relative file names). The executable's mapping
// path, a temporary build directory, is reduced to its base name before the
// profiles are written.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/pprof"

	"github.com/google/pprof/profile"
)

// Every allocation is recorded: the rate must be set before the first
// allocation worth profiling, hence in a package-level initialiser.
var _ = func() int { runtime.MemProfileRate = 1; return 0 }()

// Workload sizes. Each size is a Go size class, so the recorded bytes are
// exactly count × size.
const (
	warmupCount  = 1000
	warmupSize   = 1024
	burstCount   = 1000
	burstSize    = 4096
	inlinedCount = 500
	inlinedSize  = 64
	treeDepth    = 10 // 2^10 distinct leaf stacks
	treeSize     = 32
)

// Site is where a workload allocates and how much it allocated.
type Site struct {
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Objects  int64  `json:"objects"`
	Bytes    int64  `json:"bytes"`
	// Caller is the function the allocating function is inlined into, if any.
	Caller string `json:"caller,omitempty"`
}

// Sites is the content of sites.json.
type Sites struct {
	Warmup  Site `json:"warmup"`
	Burst   Site `json:"burst"`
	Inlined Site `json:"inlined"`
	// TreeLeaves is the number of distinct stacks of the wide-tree workload.
	TreeLeaves int `json:"tree_leaves"`
}

func main() {
	out := flag.String("out", "testdata", "directory to write the profiles into")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	var sites Sites
	var keep [][]byte

	bufs, site := warmup()
	keep = append(keep, bufs...)
	sites.Warmup = site

	var leaves int
	keep = treeA(keep, treeDepth, &leaves)
	sites.TreeLeaves = leaves

	bufs, site = inlinedWorkload()
	keep = append(keep, bufs...)
	sites.Inlined = site

	if err := writeHeap(filepath.Join(out, "heap-start.pb.gz")); err != nil {
		return err
	}

	bufs, site = burst()
	keep = append(keep, bufs...)
	sites.Burst = site

	if err := writeHeap(filepath.Join(out, "heap-end.pb.gz")); err != nil {
		return err
	}
	runtime.KeepAlive(keep)

	data, err := json.MarshalIndent(sites, "", "  ")
	if err != nil {
		return fmt.Errorf("encode sites: %w", err)
	}
	return os.WriteFile(filepath.Join(out, "sites.json"), append(data, '\n'), 0o644)
}

// siteOf reports the function, file and line of the entry of fn.
func siteOf(fn func() []byte) Site {
	f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
	file, line := f.FileLine(f.Entry())
	return Site{Function: f.Name(), File: file, Line: line}
}

// warmupAlloc and burstAlloc allocate on the line of their entry (they are
// written on one line), which siteOf reports.
//
//go:noinline
func warmupAlloc() []byte { return make([]byte, warmupSize) }

//go:noinline
func burstAlloc() []byte { return make([]byte, burstSize) }

//go:noinline
func warmup() ([][]byte, Site) {
	bufs := make([][]byte, warmupCount)
	for i := range bufs {
		bufs[i] = warmupAlloc()
	}
	s := siteOf(warmupAlloc)
	s.Objects, s.Bytes = warmupCount, warmupCount*warmupSize
	return bufs, s
}

//go:noinline
func burst() ([][]byte, Site) {
	bufs := make([][]byte, burstCount)
	for i := range bufs {
		bufs[i] = burstAlloc()
	}
	s := siteOf(burstAlloc)
	s.Objects, s.Bytes = burstCount, burstCount*burstSize
	return bufs, s
}

// newSmall is small enough to be inlined into inlinedWorkload, so its
// allocation sits in an inlined frame. It is written on one line so that
// the line of its allocation is the line of its entry.
func newSmall() []byte { return make([]byte, inlinedSize) }

//go:noinline
func inlinedWorkload() ([][]byte, Site) {
	bufs := make([][]byte, inlinedCount)
	for i := range bufs {
		bufs[i] = newSmall()
	}
	s := siteOf(newSmall)
	s.Objects, s.Bytes = inlinedCount, inlinedCount*inlinedSize
	s.Caller = "main.inlinedWorkload"
	return bufs, s
}

// treeA and treeB call each other through two call sites each, so a tree of
// depth d ends in 2^d distinct stacks, each allocating once at a leaf.
//
//go:noinline
func treeA(keep [][]byte, depth int, leaves *int) [][]byte {
	if depth == 0 {
		*leaves++
		return append(keep, make([]byte, treeSize))
	}
	keep = treeA(keep, depth-1, leaves)
	return treeB(keep, depth-1, leaves)
}

//go:noinline
func treeB(keep [][]byte, depth int, leaves *int) [][]byte {
	if depth == 0 {
		*leaves++
		return append(keep, make([]byte, treeSize))
	}
	keep = treeB(keep, depth-1, leaves)
	return treeA(keep, depth-1, leaves)
}

// writeHeap forces a collection, so the profile holds every allocation made
// so far, and writes the runtime's heap profile to path with the
// executable's mapping path reduced to its base name.
func writeHeap(path string) error {
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		return fmt.Errorf("write heap profile: %w", err)
	}
	p, err := profile.ParseData(buf.Bytes())
	if err != nil {
		return fmt.Errorf("parse own heap profile: %w", err)
	}
	for _, m := range p.Mapping {
		if filepath.IsAbs(m.File) {
			m.File = filepath.Base(m.File)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
