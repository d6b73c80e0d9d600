package diagnose

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/pprofx"
)

// compressingHandler gzips every response with a compressor of its own:
// the per-response compressor whose tables dominate a service's
// allocations.
func compressingHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Encoding", "gzip")
	zw := gzip.NewWriter(w)
	io.WriteString(zw, strings.Repeat("payload ", 64))
	zw.Close()
}

// ownProfile returns this test process's profile of the given name, as
// /debug/pprof serves it, parsed.
func ownProfile(t *testing.T, name string) Profile {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup(name).WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := pprofx.Parse(buf.Bytes(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return Profile{Name: name + ".pb.gz", Time: time.Now(), Profile: p}
}

// TestRun_oneAllocsProfile: the allocation profile of a real service
// whose per-response compressor is most of its bytes names it, rated by
// its share, with the size of each object, from that profile alone.
func TestRun_oneAllocsProfile(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(compressingHandler))
	defer srv.Close()
	for range 300 {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	runtime.GC() // the profile shows what the last GC cycle saw
	rep := Run(Input{Heap: []Profile{ownProfile(t, "allocs")}})
	fs := findingsWith(rep.Findings, "pattern.per-call-compressor")
	if len(fs) == 0 {
		t.Fatalf("no per-call compressor finding; findings %v\nnotes %v", rep.Findings, rep.Notes)
	}
	f := fs[0]
	if !strings.HasSuffix(f.Function, ".compressingHandler") || SeverityOf(f) < Medium {
		t.Errorf("finding at %s, %s: want medium or above at compressingHandler", f.Function, f.Severity)
	}
	for _, want := range []string{"since the process started", "each on average"} {
		if !strings.Contains(f.Title, want) {
			t.Errorf("title %q does not say %q", f.Title, want)
		}
	}
	if !hasNote(rep.Notes, "a second snapshot") {
		t.Errorf("notes %v do not say what a second snapshot adds", rep.Notes)
	}
}

// TestRun_oneGoroutineProfile: goroutines piled up on one channel receive
// are named at the line that waits; idle keep-alive connections of an
// HTTP server, as many, are not a pile-up.
func TestRun_oneGoroutineProfile(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	for range 150 {
		started.Add(1)
		go waitForRelease(release, &started)
	}
	started.Wait()
	defer close(release)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	var clients []*http.Client
	for range 150 {
		c := &http.Client{Transport: &http.Transport{}}
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		clients = append(clients, c)
	}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()

	rep := Run(Input{Goroutines: []Profile{ownProfile(t, "goroutine")}})
	fs := findingsWith(rep.Findings, "goroutine.pile-up")
	if len(fs) != 1 {
		t.Fatalf("pile-ups %v, want one, at waitForRelease", fs)
	}
	f := fs[0]
	if !strings.HasSuffix(f.Function, ".waitForRelease") || f.Evidence["goroutines"] < 150 || SeverityOf(f) != Low ||
		!strings.Contains(f.Title, "blocked receiving from a channel") {
		t.Errorf("pile-up %q at %s (%s, evidence %v): want 150 goroutines receiving at waitForRelease, low", f.Title, f.Function, f.Severity, f.Evidence)
	}
}

func waitForRelease(release <-chan struct{}, started *sync.WaitGroup) {
	started.Done()
	<-release
}

// TestRun_oneCPUProfile: a CPU profile of code that allocates all the
// time says what allocation and the GC cost and names the allocating
// function.
func TestRun_oneCPUProfile(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	var keep [][]byte
	for time.Now().Before(deadline) {
		keep = allocateChurn(keep)
	}
	pprof.StopCPUProfile()
	p, err := pprofx.Parse(buf.Bytes(), 0)
	if err != nil {
		t.Fatal(err)
	}
	rep := Run(Input{CPU: p})
	fs := findingsWith(rep.Findings, "gc.cpu-profile")
	if len(fs) != 1 {
		t.Fatalf("findings %v, notes %v: want one gc.cpu-profile", rep.Findings, rep.Notes)
	}
	f := fs[0]
	if SeverityOf(f) < Low || f.Evidence["alloc_gc_cpu_share"] < 0.10 || !strings.Contains(f.Title, "allocateChurn") {
		t.Errorf("finding %q (%s, evidence %v): want allocation and GC at 10%% or more, allocateChurn named", f.Title, f.Severity, f.Evidence)
	}
	hot := findingsWith(rep.Findings, "cpu.hot-spot")
	if len(hot) == 0 || !strings.HasSuffix(hot[0].Function, ".allocateChurn") || hot[0].Evidence["cpu_share"] < 0.1 {
		t.Errorf("CPU hot spots %+v: want allocateChurn first", hot)
	}
}

// allocateChurn allocates pointer-holding garbage, keeping a little of
// it, so that both the allocator and the GC work.
func allocateChurn(keep [][]byte) [][]byte {
	for range 1000 {
		b := make([]byte, 512)
		if len(keep) < 64 {
			keep = append(keep, b)
		} else {
			keep[len(b)%64] = b
		}
	}
	return keep
}

func hasNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
