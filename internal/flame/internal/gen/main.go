// Command gen writes the small profiles under internal/flame/testdata.
//
// Each profile comes from a process of its own (gen runs itself with
// -variant and GODEBUG=memprofilerate=1, so that every allocation is
// recorded from the start), and the heap profiles, which count allocations
// since the process started, hold one workload each:
//
//	heap-before.pb.gz  a small service-like workload:
//	                   JSON encoding and fmt (standard library), goroutines
//	                   started (runtime frames), recursion and an inlined
//	                   helper (application frames)
//	heap-after.pb.gz   the same after an "optimisation": the response
//	                   encoder reuses its buffer, keys are built with strconv
//	                   instead of fmt (the fmt stacks vanish), and a new
//	                   audit step allocates
//	cpu.pb.gz          a CPU profile of a busy loop that allocates (so GC and
//	                   allocator frames show)
//
// Run it through go generate in internal/flame; it builds with -trimpath so
// the profiles hold module-relative file names, and the executable's
// mapping path is reduced to its base name.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
)

func main() {
	out := flag.String("out", "testdata", "directory to write the profiles into")
	variant := flag.String("variant", "", "write one profile: before, after or cpu (default: all, each in a process of its own)")
	flag.Parse()
	if err := run(*out, *variant); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out, variant string) error {
	switch variant {
	case "":
		self, err := os.Executable()
		if err != nil {
			return err
		}
		for _, v := range []string{"before", "after", "cpu"} {
			cmd := exec.Command(self, "-out", out, "-variant", v)
			// The runtime reads the rate before any package initialises, so
			// the allocations of package initialisers are all recorded too
			// and both heap profiles record them alike.
			cmd.Env = append(os.Environ(), "GODEBUG=memprofilerate=1")
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("variant %s: %w", v, err)
			}
		}
		return nil
	case "before", "after":
		keep := serve(variant == "after", 400)
		runtime.KeepAlive(keep)
		runtime.GC()
		var buf bytes.Buffer
		if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
			return err
		}
		return write(filepath.Join(out, "heap-"+variant+".pb.gz"), buf.Bytes())
	case "cpu":
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			return err
		}
		busy(400 * time.Millisecond)
		pprof.StopCPUProfile()
		return write(filepath.Join(out, "cpu.pb.gz"), buf.Bytes())
	}
	return fmt.Errorf("unknown variant %q", variant)
}

// write reduces the executable's mapping path to its base name and writes
// the profile.
func write(path string, data []byte) error {
	p, err := profile.ParseData(data)
	if err != nil {
		return fmt.Errorf("parse own profile: %w", err)
	}
	for _, m := range p.Mapping {
		if filepath.IsAbs(m.File) {
			m.File = filepath.Base(m.File)
		}
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

type record struct {
	ID    int      `json:"id"`
	Name  string   `json:"name"`
	Tags  []string `json:"tags"`
	Score float64  `json:"score"`
}

type server struct {
	optimised bool
	cache     map[string][]byte
	buf       bytes.Buffer
	audit     [][]byte
}

// serve handles n requests and starts a few workers; it returns what
// stays reachable.
//
//go:noinline
func serve(optimised bool, n int) any {
	s := &server{optimised: optimised, cache: map[string][]byte{}}
	for i := range n {
		s.handle(i)
	}
	workers := startWorkers(8)
	tree := walk(6)
	return []any{s, workers, tree}
}

//go:noinline
func (s *server) handle(i int) {
	key := s.key(i)
	body := s.encode(record{ID: i, Name: "user-" + strconv.Itoa(i%50), Tags: []string{"a", "b"}, Score: float64(i) / 3})
	s.store(key, body)
	if s.optimised {
		s.record(key)
	}
}

//go:noinline
func (s *server) key(i int) string {
	if s.optimised {
		return "k" + strconv.Itoa(i)
	}
	return fmt.Sprintf("key-%05d", i)
}

//go:noinline
func (s *server) encode(r record) []byte {
	if s.optimised {
		s.buf.Reset()
		_ = json.NewEncoder(&s.buf).Encode(r)
		return s.buf.Bytes()
	}
	b, _ := json.Marshal(r)
	return b
}

//go:noinline
func (s *server) store(key string, body []byte) {
	s.cache[key] = clone(body)
}

// clone is small enough to be inlined into store.
func clone(b []byte) []byte { return append([]byte(nil), b...) }

//go:noinline
func (s *server) record(key string) {
	s.audit = append(s.audit, []byte(strings.ToUpper(key)))
}

//go:noinline
func startWorkers(n int) []chan int {
	var wg sync.WaitGroup
	chans := make([]chan int, n)
	for i := range chans {
		chans[i] = make(chan int, 1)
		wg.Add(1)
		go func(c chan int) {
			defer wg.Done()
			c <- len(make([]byte, 256))
		}(chans[i])
	}
	wg.Wait()
	return chans
}

type node struct {
	children []*node
	payload  []byte
}

// walk builds a small tree recursively.
//
//go:noinline
func walk(depth int) *node {
	n := &node{payload: make([]byte, 64)}
	if depth > 0 {
		n.children = []*node{walk(depth - 1), walk(depth - 1)}
	}
	return n
}

// busy keeps a CPU busy for d: hashing, sorting and allocating.
//
//go:noinline
func busy(d time.Duration) {
	deadline := time.Now().Add(d)
	var sink []string
	for time.Now().Before(deadline) {
		words := make([]string, 2000)
		for i := range words {
			words[i] = strconv.Itoa((i * 7919) % 2003)
		}
		sort.Strings(words)
		sink = append(sink[:0], strings.Join(words, ","))
	}
	runtime.KeepAlive(sink)
}
