package run

import (
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/target"
)

func TestProfile_RepeatRecordsWindows(t *testing.T) {
	// The hoard's 64 KiB a request, sampled: at the default rate of one
	// sample per 512 KiB a window of 40 requests has about five samples,
	// and one window in seven fewer than three, reading under 32 KiB a
	// request. At one per 64 KiB it has about 25, and reading under half
	// the truth is a four-sigma event.
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 64 << 10
	h := &hoard{}
	srv := serve(t, pprofMux(map[string]http.HandlerFunc{"/work": h.ServeHTTP}))
	var progressed atomic.Int64
	res, dir, err := Profile(t.Context(), Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: 400 * time.Millisecond, Snapshots: 2,
		Load:   &load.Options{Targets: []load.Request{{Method: "GET", URL: srv.URL + "/work"}}, Rate: 100},
		Repeat: 3, OutDir: t.TempDir(), Version: "test",
		Progress: func(p Progress) {
			if p.Total == 1200*time.Millisecond {
				progressed.Store(int64(max(time.Duration(progressed.Load()), p.Elapsed)))
			}
		},
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if res.Status != result.StatusComplete || res.Repeat == nil || len(res.Repeat.Windows) != 3 {
		t.Fatalf("status %s, repeat %+v", res.Status, res.Repeat)
	}
	back, err := rundir.Read(dir)
	if err != nil || back.Repeat == nil {
		t.Fatalf("stored top-level result: %v, %+v", err, back)
	}
	for i, w := range back.Repeat.Windows {
		if want := filepath.ToSlash(filepath.Join("windows", []string{"001", "002", "003"}[i])); w.Path != want || w.Status != result.StatusComplete {
			t.Errorf("window %d: %+v, want %s complete", i, w, want)
		}
		wres, err := rundir.Read(filepath.Join(dir, w.Path))
		if err != nil || wres.PerRequest == nil || wres.PerRequest.BytesPerRequest <= 0 {
			t.Fatalf("window %s: %v, per request %+v", w.Path, err, wres)
		}
		if _, err := os.Stat(filepath.Join(dir, w.Path, "profiles", "allocs-delta.pb.gz")); err != nil {
			t.Errorf("window %s lacks its allocation profile: %v", w.Path, err)
		}
	}
	bpr, ok := back.Repeat.Figures["bytes_per_request"]
	if !ok || bpr.N != 3 || bpr.Min > bpr.Median || bpr.Median > bpr.Max || back.PerRequest.BytesPerRequest != bpr.Median {
		t.Errorf("bytes_per_request summary %+v, top-level %+v: want the median of 3 windows in both", bpr, back.PerRequest)
	}
	// The hoard keeps 64 KiB per request; the profiles are sampled.
	if bpr.Median < 32<<10 {
		t.Errorf("median bytes per request %v, want at least 32 KiB", bpr.Median)
	}
	stored, warnings, err := rundir.ReadStored(dir)
	if err != nil || len(stored) != 3 || len(warnings) != 0 {
		t.Fatalf("ReadStored: %d runs, warnings %v, err %v", len(stored), warnings, err)
	}
	for _, s := range stored {
		if s.Allocs == nil {
			t.Errorf("%s: no allocation profile read", s.Dir)
		}
	}
	// Each window reports its progress once more at its end.
	if got := time.Duration(progressed.Load()); got != 1200*time.Millisecond {
		t.Errorf("progress reached %s of the 1.2s of three windows, want all of it", got)
	}
	if md, err := os.ReadFile(filepath.Join(dir, "report.md")); err != nil || !strings.Contains(string(md), "windows") {
		t.Errorf("report.md of the repeated run: %v\n%s", err, md)
	}
	// The top level has a page and a flame graph of its own: the windows'
	// allocations merged, the hoard's among them.
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(page), `href="windows/002/report.html"`) || !strings.Contains(string(page), "Allocations over the 3 windows") {
		t.Errorf("report.html of the repeated run: %v, want links to the windows and the merged flame graph", err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "flame", "alloc_space.svg"))
	if err != nil || !strings.Contains(string(svg), "hoard") {
		t.Errorf("flame/alloc_space.svg of the repeated run: %v, want the hoard's allocations in it", err)
	}
	if back.Files.HTMLReport != "report.html" || len(back.Files.Flames) != 1 {
		t.Errorf("files %+v, want report.html and the flame graph listed", back.Files)
	}
}

func TestProfile_RepeatGoesOnAfterAFailedWindow(t *testing.T) {
	// Window 1 takes two heap?gc=1 snapshots; the third, window 2's
	// start, fails.
	var heaps atomic.Int32
	mux := pprofMux(map[string]http.HandlerFunc{
		"/debug/pprof/heap": func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if q.Get("gc") == "1" && q.Get("debug") == "" && heaps.Add(1) == 3 {
				http.Error(w, "heap profile unavailable", http.StatusServiceUnavailable)
				return
			}
			pprof.Handler("heap").ServeHTTP(w, r)
		},
	})
	srv := serve(t, mux)
	res, dir, err := Profile(t.Context(), Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: 200 * time.Millisecond, Snapshots: 2,
		Repeat: 3, OutDir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if res.Status != result.StatusPartial || len(res.Failures) != 1 || res.Failures[0].Step != "window windows/002" ||
		!strings.Contains(res.Failures[0].Error, "heap profile unavailable") {
		t.Fatalf("status %s, failures %+v: want window 2 named with the server's message", res.Status, res.Failures)
	}
	stored, warnings, err := rundir.ReadStored(dir)
	if err != nil || len(stored) != 2 || len(warnings) != 1 || !strings.Contains(warnings[0], "002") {
		t.Errorf("ReadStored: %d runs, warnings %v, err %v: want windows 1 and 3 and a word on 2", len(stored), warnings, err)
	}
}

func TestConfig_ValidateRepeat(t *testing.T) {
	for _, n := range []int{-1, maxRepeat + 1} {
		c := Config{Target: target.Options{BaseURL: "http://127.0.0.1:1"}, Repeat: n}
		if err := c.prepare(); err == nil || !strings.Contains(strings.ToLower(err.Error()), "repeat") {
			t.Errorf("repeat %d: error %v", n, err)
		}
	}
}
