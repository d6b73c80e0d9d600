package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	rpprof "runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/target"
)

// pprofMux mounts net/http/pprof the way services do, plus the routes given.
func pprofMux(routes map[string]http.HandlerFunc) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	for path, h := range routes {
		mux.HandleFunc(path, h)
	}
	return mux
}

// hoard is an allocation the test can find in profiles: it keeps every
// buffer it makes.
type hoard struct {
	mu   sync.Mutex
	kept [][]byte
}

func (h *hoard) keep(n int) {
	b := make([]byte, n)
	h.mu.Lock()
	h.kept = append(h.kept, b)
	h.mu.Unlock()
}

func (h *hoard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.keep(64 << 10)
	w.Write([]byte("ok"))
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestProfile_CollectsWindowFromRealService(t *testing.T) {
	// One sample per 64 KiB, one per request kept: at the default 512 KiB
	// three snapshots of 150 requests hold a score of samples, whose
	// noise alone can bend a straight growth below the R² asked.
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 64 << 10
	h := &hoard{}
	srv := serve(t, pprofMux(map[string]http.HandlerFunc{"/work": h.ServeHTTP}))
	out := t.TempDir()

	res, dir, err := Profile(t.Context(), Config{
		Target:    target.Options{BaseURL: srv.URL},
		Duration:  1500 * time.Millisecond,
		Snapshots: 3,
		CPU:       true,
		Load:      &load.Options{Targets: []load.Request{{Method: "GET", URL: srv.URL + "/work?n={seq}"}}, Rate: 100},
		OutDir:    out,
		Version:   "test",
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if res.Status != result.StatusComplete {
		t.Fatalf("status %s, failures %+v", res.Status, res.Failures)
	}
	if filepath.Dir(dir) != out {
		t.Errorf("run directory %s is not under %s", dir, out)
	}

	t.Run("snapshots", func(t *testing.T) {
		g := res.HeapGrowth
		if g == nil || len(g.Snapshots) != 3 {
			t.Fatalf("heap growth %+v, want 3 snapshots", g)
		}
		// The handler keeps 64 KiB per request; the profile is sampled.
		if res.Load == nil || g.GrowthBytes < int64(res.Load.Completed)*32<<10 {
			t.Errorf("inuse grew %d bytes over the window, want at least 32 KiB per request answered", g.GrowthBytes)
		}
		if g.SlopeBytesPerMinute <= 0 || g.R2 < 0.8 {
			t.Errorf("slope %g B/min, R² %g: want steady growth", g.SlopeBytesPerMinute, g.R2)
		}
	})
	t.Run("top sites name the allocating line", func(t *testing.T) {
		for _, st := range []string{"alloc_space", "inuse_space"} {
			tab := res.TopFor(st)
			if tab == nil {
				t.Fatalf("no %s table", st)
			}
			if !hasSite(tab, "(*hoard).keep") {
				t.Errorf("%s top sites do not include hoard.keep: %+v", st, tab.Sites)
			}
		}
		if tab := res.TopFor("alloc_space"); !strings.Contains(tab.Semantics, "delta over the window") {
			t.Errorf("alloc_space semantics %q do not say it is a delta", tab.Semantics)
		}
		if tab := res.TopFor("inuse_space"); !strings.Contains(tab.Semantics, "not a delta") {
			t.Errorf("inuse_space semantics %q do not say it is a snapshot", tab.Semantics)
		}
		if res.TopFor("cpu") == nil {
			t.Error("no cpu table")
		}
		for _, p := range res.Profiles {
			if p.Kind == "cpu" && !strings.Contains(p.Semantics, "first 1s of the 1.5s window") {
				t.Errorf("cpu profile semantics %q do not say it covers the first whole second", p.Semantics)
			}
		}
	})
	t.Run("per request", func(t *testing.T) {
		// 150 are due; a busy machine may fall behind, not this far.
		if res.Load == nil || res.Load.Completed < 50 || res.Load.Completed != res.Load.Requests {
			t.Fatalf("load %+v, want every request sent completed, and ≥ 50 of them", res.Load)
		}
		pr := res.PerRequest
		if pr == nil {
			t.Fatal("no per-request figures")
		}
		// Each request keeps a 64 KiB buffer; the profile is sampled.
		if pr.BytesPerRequest < 32<<10 || pr.BytesPerRequest > 256<<10 {
			t.Errorf("bytes per request %.0f, want about 64 KiB", pr.BytesPerRequest)
		}
		if pr.MemStatsBytesPerRequest == nil || *pr.MemStatsBytesPerRequest < 64<<10 {
			t.Errorf("MemStats bytes per request %v, want at least 64 KiB", pr.MemStatsBytesPerRequest)
		}
	})
	t.Run("load.json", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(dir, "load.json"))
		if err != nil {
			t.Fatal(err)
		}
		var l result.Load
		if err := json.Unmarshal(data, &l); err != nil {
			t.Fatal(err)
		}
		// The window's load with its per-second figures; result.json has
		// the same without them.
		if l.Model != "open" || l.Requests != res.Load.Requests || l.RequestedRate != 100 || l.Lag == nil || len(l.Series) < 1 || l.DurationSeconds != 1.5 {
			t.Errorf("load.json %+v, want the open model's 100/s over the 1.5s window with a series", l)
		}
		if res.Load.Series != nil {
			t.Errorf("result.json's load has a series of %d seconds, want none", len(res.Load.Series))
		}
	})
	t.Run("local process", func(t *testing.T) {
		if res.Target.PID != os.Getpid() || !res.Target.Local {
			t.Errorf("pid %d local %v, want this test process %d", res.Target.PID, res.Target.Local, os.Getpid())
		}
		if res.Target.GoVersion != runtime.Version() {
			t.Errorf("target Go version %q, want %q", res.Target.GoVersion, runtime.Version())
		}
		if res.RSS.Source != "proc" || res.RSS.RSSBytes == 0 {
			t.Errorf("rss %+v, want read from /proc", res.RSS)
		}
		if hm := res.RSS.GoHeapMappings; hm == nil || hm.Count == 0 || hm.SizeBytes < res.MemStats.HeapInuseBytes {
			t.Errorf("go heap mappings %+v, want arenas at least as large as HeapInuse %d", hm, res.MemStats.HeapInuseBytes)
		}
		var heapKind *result.MappingKind
		for i, k := range res.RSS.Mappings {
			if k.Kind == result.MappingGoHeap {
				heapKind = &res.RSS.Mappings[i]
			}
		}
		if hm := res.RSS.GoHeapMappings; heapKind == nil || hm == nil || heapKind.RSSBytes != hm.RSSBytes || heapKind.SizeBytes != hm.SizeBytes {
			t.Errorf("mappings %+v: want a go-heap kind that sums the heap arenas %+v", res.RSS.Mappings, hm)
		}
	})
	t.Run("gc window", func(t *testing.T) {
		ms := res.MemStats
		// MemStats are read after the first snapshot's GCs: the window
		// between them holds the other two snapshots' forced cycles, two
		// each (the heap profile's, and the MemStats read's).
		if ms.GCForcedCycles != 4 || ms.GCCycles < ms.GCForcedCycles {
			t.Errorf("gc cycles %d forced %d: want the 4 forced by the later snapshots", ms.GCCycles, ms.GCForcedCycles)
		}
		if ms.GCCPUFractionScope != "window" {
			t.Errorf("GC CPU scope %q, want window (uptime is known)", ms.GCCPUFractionScope)
		}
		if ms.AllocatedBytes < 4<<20 {
			t.Errorf("allocated %d bytes over the window, want ≥ 4 MiB", ms.AllocatedBytes)
		}
	})
	t.Run("run directory", func(t *testing.T) {
		for _, p := range res.Profiles {
			data, err := os.ReadFile(filepath.Join(dir, p.Path))
			if err != nil {
				t.Errorf("profile %s listed but not written: %v", p.Path, err)
				continue
			}
			if _, err := pprofx.Parse(data, pprofx.DefaultMaxDecompressed); err != nil {
				t.Errorf("profile %s does not parse: %v", p.Path, err)
			}
		}
		for _, f := range []string{"report.md", "memstats.json", "load.json", "profiles/allocs-delta.pb.gz", "profiles/cpu.pb.gz", "profiles/goroutine.pb.gz"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("missing %s: %v", f, err)
			}
		}
		back, err := rundir.Read(dir)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if back.Status != res.Status || len(back.Top) != len(res.Top) {
			t.Errorf("Read gave status %s with %d tables, want %s with %d", back.Status, len(back.Top), res.Status, len(res.Top))
		}
		raw, _ := os.ReadFile(filepath.Join(dir, result.FileName))
		if errs := validate(result.Schema(), raw); len(errs) > 0 {
			t.Errorf("result.json does not match its schema: %v", errs)
		}
		leftovers, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
		if len(leftovers) > 0 {
			t.Errorf("temporary files left: %v", leftovers)
		}
	})
}

func hasSite(tab *result.TopTable, fn string) bool {
	for _, s := range tab.Sites {
		if strings.Contains(s.Function, fn) {
			return true
		}
	}
	return false
}

func TestProfile_BadTargets(t *testing.T) {
	gzipOf := func(data []byte) []byte { return gzipped(t, data) }
	realHeap := func() []byte {
		var buf bytes.Buffer
		if err := rpprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	body := func(b []byte) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(b) })
	}
	tests := []struct {
		name    string
		handler http.Handler // nil: nothing listens
		maxBody int64
		limits  pprofx.Limits
		wantErr string
		check   func(error) bool
	}{
		{name: "unreachable", wantErr: "cannot reach", check: func(err error) bool {
			var ue *target.UnreachableError
			return errors.As(err, &ue)
		}},
		{name: "no pprof", handler: http.NotFoundHandler(), wantErr: "404", check: func(err error) bool { return errors.Is(err, target.ErrNotFound) }},
		{name: "html page", handler: body([]byte("<html><body>hello</body></html>")), wantErr: "not a pprof profile", check: func(err error) bool { return errors.Is(err, pprofx.ErrNotProfile) }},
		{name: "truncated profile", handler: body(realHeap[:len(realHeap)/2]), wantErr: "heap profile"},
		{name: "gzip bomb", handler: body(gzipOf(make([]byte, 8<<20))), limits: pprofx.Limits{MaxDecompressed: 1 << 20}, wantErr: "decompresses to more than", check: func(err error) bool {
			var tl *pprofx.TooLargeError
			return errors.As(err, &tl)
		}},
		{name: "body over limit", handler: body(realHeap), maxBody: 64, wantErr: "larger than the limit", check: func(err error) bool {
			var bt *target.BodyTooLargeError
			return errors.As(err, &bt)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := closedURL
			if tt.handler != nil {
				url = serve(t, tt.handler).URL
			}
			out := t.TempDir()
			_, _, err := Profile(t.Context(), Config{
				Target:   target.Options{BaseURL: url, MaxBody: tt.maxBody},
				Duration: time.Second,
				OutDir:   out,
				limits:   tt.limits,
			})
			if err == nil {
				t.Fatal("Profile succeeded against a bad target")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if tt.check != nil && !tt.check(err) {
				t.Errorf("error %v (%T) is not of the expected kind", err, errors.Unwrap(err))
			}
			entries, _ := os.ReadDir(out)
			if len(entries) != 0 {
				t.Errorf("a failed run left %d entries in the output directory", len(entries))
			}
		})
	}
}

func TestConfig_Validate(t *testing.T) {
	valid := Config{Target: target.Options{BaseURL: "http://127.0.0.1:1"}, Duration: time.Second, Repeat: 1}
	with := func(f func(*Config)) Config { c := valid; f(&c); return c }
	lo := &load.Options{Targets: []load.Request{{URL: "http://h/"}}, Rate: 1, Timeout: time.Second}
	tests := []struct {
		name  string
		cfg   Config
		field string // "" for no *option.Error
		want  string // "" for a valid configuration
	}{
		{"valid", valid, "", ""},
		{"zero snapshots and max duration are the defaults", with(func(c *Config) { c.Snapshots, c.MaxDuration = 0, 0 }), "", ""},
		{"with load", with(func(c *Config) { c.Load, c.Warmup = lo, time.Second }), "", ""},
		{"negative timeout", with(func(c *Config) { c.Target.Timeout = -1 }), "Target.Timeout", "Target.Timeout -1ns: give a positive duration"},
		{"zero duration", with(func(c *Config) { c.Duration = 0 }), "Duration", "Duration 0s: give a positive window such as 30s"},
		{"negative duration", with(func(c *Config) { c.Duration = -time.Second }), "Duration", "Duration -1s: give a positive window"},
		{"zero repeat", with(func(c *Config) { c.Repeat = 0 }), "Repeat", "Repeat 0: give a number of windows ≥ 1"},
		{"max duration below the window", with(func(c *Config) { c.MaxDuration = time.Millisecond }), "MaxDuration", "MaxDuration 1ms: give at least the Duration window, 1s"},
		{"load without a model", with(func(c *Config) { c.Load = &load.Options{Targets: lo.Targets, Timeout: time.Second} }), "Load.Rate", "no load model: give Load.Rate R"},
		{"load with a zero timeout", with(func(c *Config) { l := *lo; l.Timeout = 0; c.Load = &l }), "Load.Timeout", "Load.Timeout 0s: give a positive duration"},
		{"too short", with(func(c *Config) { c.Duration = time.Millisecond }), "Duration", "duration 1ms is too short"},
		{"one snapshot", with(func(c *Config) { c.Snapshots = 1 }), "Snapshots", "at least 2"},
		{"interval beyond window", with(func(c *Config) { c.Interval = 2 * time.Second }), "Interval", "longer than"},
		{"interval too short", with(func(c *Config) { c.Interval = time.Millisecond }), "Interval", "too short"},
		{"interval making too many snapshots", with(func(c *Config) { c.Duration, c.Interval = time.Hour, time.Second }), "Interval", "at most 1000"},
		{"too many snapshots", with(func(c *Config) { c.Snapshots = 1001 }), "Snapshots", "at most 1000"},
		{"unknown extra profile", with(func(c *Config) { c.Extra = []string{"heap"} }), "Extra", "block or mutex"},
		{"negative pid", with(func(c *Config) { c.PID = -3 }), "PID", "pid -3 is negative"},
		{"too many windows", with(func(c *Config) { c.Repeat = maxRepeat + 1 }), "Repeat", "repeat 1001: give between 1 and 1000 windows"},
		{"warm-up without load", with(func(c *Config) { c.Warmup = time.Second }), "Warmup", "give the load too"},
		{"bad url", with(func(c *Config) { c.Target.BaseURL = "ftp://x" }), "", "scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
			var oe *option.Error
			if isOption := errors.As(err, &oe); isOption != (tt.field != "") || isOption && oe.Field != tt.field {
				t.Errorf("Validate() = %v, want an *option.Error about %q", err, tt.field)
			}
		})
	}
}

// TestConfig_prepare checks what Profile does before it runs: the defaults
// of zero fields filled, then the checks, the load's requests compiled.
func TestConfig_prepare(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // "" for none
	}{
		{"defaults", Config{Target: target.Options{BaseURL: "http://127.0.0.1:1"}}, ""},
		{"a library's load without a timeout", Config{Target: target.Options{BaseURL: "http://127.0.0.1:1"}, Load: &load.Options{Targets: []load.Request{{URL: "http://h/"}}, Rate: 1}}, ""},
		{"negative duration", Config{Duration: -time.Second}, "positive window"},
		{"load with a bad pick file", Config{Target: target.Options{BaseURL: "http://127.0.0.1:1"}, Duration: time.Second, Load: &load.Options{Targets: []load.Request{{URL: "http://h/{pick:/nonexistent/ids}"}}, Rate: 1}}, "read values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo := tt.cfg.Load
			err := tt.cfg.prepare()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tt.cfg.Duration != DefaultDuration || tt.cfg.Snapshots != DefaultSnapshots || tt.cfg.Repeat != 1 || tt.cfg.fetcher == nil {
					t.Errorf("prepared %+v: defaults or fetcher missing", tt.cfg)
				}
				if lo != nil && (tt.cfg.Load.Timeout != load.DefaultTimeout || lo.Timeout != 0) {
					t.Errorf("load timeout %s (the caller's %s), want the default filled on a copy", tt.cfg.Load.Timeout, lo.Timeout)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("prepare() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfig_SnapshotOffsets(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []time.Duration
	}{
		{"three over the window", Config{Duration: 10 * time.Second, Snapshots: 3}, []time.Duration{0, 5 * time.Second, 10 * time.Second}},
		{"start and end", Config{Duration: 4 * time.Second, Snapshots: 2}, []time.Duration{0, 4 * time.Second}},
		{"interval dividing the window", Config{Duration: 3 * time.Second, Interval: time.Second}, []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}},
		{"interval not dividing it", Config{Duration: 2500 * time.Millisecond, Interval: time.Second}, []time.Duration{0, time.Second, 2 * time.Second, 2500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cfg.snapshotOffsets()
			if len(got) != len(tt.want) {
				t.Fatalf("offsets %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("offsets %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestProfile_PartialWhenAProfileFails(t *testing.T) {
	mux := pprofMux(map[string]http.HandlerFunc{
		"/debug/pprof/goroutine": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "goroutine profile disabled here", http.StatusInternalServerError)
		},
	})
	srv := serve(t, mux)
	res, dir, err := Profile(t.Context(), Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: 300 * time.Millisecond, OutDir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if res.Status != result.StatusPartial {
		t.Fatalf("status %s, want partial", res.Status)
	}
	if len(res.Failures) != 1 || res.Failures[0].Step != "goroutine profile" || !strings.Contains(res.Failures[0].Error, "goroutine profile disabled here") {
		t.Errorf("failures %+v, want the goroutine profile with the server's message", res.Failures)
	}
	back, err := rundir.Read(dir)
	if err != nil || back.Status != result.StatusPartial {
		t.Errorf("stored run: %v, status %v", err, back)
	}
	if res.TopFor("alloc_space") == nil {
		t.Error("the rest of the run was not kept: no alloc_space table")
	}
}

func TestProfile_CPUProfileBusy(t *testing.T) {
	srv := serve(t, pprofMux(nil))
	// The test process is the target: hold its one CPU profile.
	if err := rpprof.StartCPUProfile(new(bytes.Buffer)); err != nil {
		t.Fatalf("StartCPUProfile: %v", err)
	}
	defer rpprof.StopCPUProfile()
	res, _, err := Profile(t.Context(), Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: time.Second, CPU: true, OutDir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if res.Status != result.StatusPartial {
		t.Fatalf("status %s, want partial", res.Status)
	}
	found := false
	for _, f := range res.Failures {
		if f.Step == "cpu profile" && strings.Contains(f.Error, "already being CPU-profiled") {
			found = true
		}
	}
	if !found {
		t.Errorf("failures %+v do not say the target is already being CPU-profiled", res.Failures)
	}
}

func TestProfile_InterruptedKeepsPartialRun(t *testing.T) {
	srv := serve(t, pprofMux(nil))
	// Interrupted once its window runs (its first progress report), not
	// after a time: before the window begins there is no run to keep.
	ctx, cancel := context.WithCancel(t.Context())
	start := time.Now()
	res, dir, err := Profile(ctx, Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: 30 * time.Second, CPU: true, OutDir: t.TempDir(),
		Progress: func(Progress) { cancel() },
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	t.Logf("an interrupted 30s run took %s", time.Since(start).Round(time.Millisecond))
	if res.Status != result.StatusPartial {
		t.Fatalf("status %s, want partial", res.Status)
	}
	steps := map[string]string{}
	for _, f := range res.Failures {
		steps[f.Step] = f.Error
	}
	for _, step := range []string{"window", "cpu profile"} {
		if !strings.Contains(steps[step], "interrupted") {
			t.Errorf("failures %+v: want %q interrupted", res.Failures, step)
		}
	}
	if res.TopFor("alloc_space") == nil {
		t.Error("an interrupted run kept no allocation delta")
	}
	if _, err := os.Stat(filepath.Join(dir, result.FileName)); err != nil {
		t.Errorf("no result.json in the interrupted run: %v", err)
	}
}

// validate checks a JSON document against the subset of JSON Schema that
// result.Schema uses: type, properties, required, additionalProperties,
// items, enum, const.
func validate(schema map[string]any, doc []byte) []string {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return []string{err.Error()}
	}
	// Round-trip the schema so its values have JSON types.
	raw, _ := json.Marshal(schema)
	var s map[string]any
	json.Unmarshal(raw, &s)
	var errs []string
	validateValue(s, v, "$", &errs)
	return errs
}

func validateValue(s map[string]any, v any, path string, errs *[]string) {
	fail := func(format string, args ...any) {
		*errs = append(*errs, path+": "+strings.TrimSpace(fmt.Sprintf(format, args...)))
	}
	if c, ok := s["const"]; ok && v != c {
		fail("%v is not %v", v, c)
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || e == v
		}
		if !found {
			fail("%v not in %v", v, enum)
		}
	}
	if t, ok := s["type"]; ok && !typeMatches(t, v) {
		fail("%T does not match type %v", v, t)
		return
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asSlice(s["required"]) {
			if _, ok := v[r.(string)]; !ok {
				fail("missing required %q", r)
			}
		}
		for k, val := range v {
			if ps, ok := props[k].(map[string]any); ok {
				validateValue(ps, val, path+"."+k, errs)
			} else if ap, ok := s["additionalProperties"].(map[string]any); ok {
				validateValue(ap, val, path+"."+k, errs)
			} else if s["additionalProperties"] == false {
				fail("unexpected property %q", k)
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range v {
				validateValue(items, e, path+"["+strconv.Itoa(i)+"]", errs)
			}
		}
	}
}

func typeMatches(t any, v any) bool {
	for _, name := range asSlice(t) {
		switch name {
		case "object":
			if _, ok := v.(map[string]any); ok {
				return true
			}
		case "array":
			if _, ok := v.([]any); ok {
				return true
			}
		case "null":
			if v == nil {
				return true
			}
		case "string":
			if _, ok := v.(string); ok {
				return true
			}
		case "boolean":
			if _, ok := v.(bool); ok {
				return true
			}
		case "number":
			if _, ok := v.(float64); ok {
				return true
			}
		case "integer":
			if f, ok := v.(float64); ok && f == float64(int64(f)) {
				return true
			}
		}
	}
	return false
}

func asSlice(v any) []any {
	switch v := v.(type) {
	case []any:
		return v
	case nil:
		return nil
	default:
		return []any{v}
	}
}

func TestProfile_RSSOfARemoteTarget(t *testing.T) {
	// An empty /proc stands in for a machine the target does not run on.
	noProc := sysmem.Proc{Root: t.TempDir()}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	withMetrics := pprofMux(map[string]http.HandlerFunc{"/metrics": promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP})

	tests := []struct {
		name       string
		handler    http.Handler
		wantSource string
	}{
		{"serves /metrics", withMetrics, "metrics"},
		{"no /metrics", pprofMux(nil), "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, tt.handler)
			res, _, err := Profile(t.Context(), Config{
				Target: target.Options{BaseURL: srv.URL}, Duration: 200 * time.Millisecond, OutDir: t.TempDir(), proc: noProc,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Target.Local || res.Target.PID != 0 {
				t.Errorf("target %+v should not be local", res.Target)
			}
			if res.RSS.Source != tt.wantSource {
				t.Errorf("rss source %q, want %q", res.RSS.Source, tt.wantSource)
			}
			if tt.wantSource == "metrics" && res.RSS.RSSBytes == 0 {
				t.Error("rss from /metrics is 0")
			}
			// The report prints "RSS: unknown: " and the note, which says why.
			if tt.wantSource == "unknown" && !strings.Contains(res.RSS.Note, "not on this machine") {
				t.Errorf("note %q does not say why RSS is unknown", res.RSS.Note)
			}
			if res.MemStats.GCCPUFractionScope != "lifetime" {
				t.Errorf("GC CPU scope %q, want lifetime without the process' uptime", res.MemStats.GCCPUFractionScope)
			}
		})
	}
}

func TestWriteRun_FailureIsOneLineAndMarksTheRunFailed(t *testing.T) {
	srv := serve(t, pprofMux(nil))
	cfg := Config{Target: target.Options{BaseURL: srv.URL}, Duration: 200 * time.Millisecond, OutDir: t.TempDir()}
	if err := cfg.prepare(); err != nil {
		t.Fatal(err)
	}
	c := &collector{cfg: &cfg}
	if err := c.start(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.window(t.Context())
	c.finish(t.Context())
	res, delta := c.summarise()
	dir := t.TempDir()
	// report.md and memstats.json cannot replace a non-empty directory.
	for _, name := range []string{reportFile, memStatsFile} {
		if err := os.MkdirAll(filepath.Join(dir, name, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, profilesDir), 0o755); err != nil {
		t.Fatal(err)
	}
	err := writeRun(dir, c, res, delta)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "and 1 more") {
		t.Fatalf("writeRun = %v, want one line naming the first failure and counting the other", err)
	}
	back, err := rundir.Read(dir)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if back.Status != result.StatusFailed || len(back.Failures) != 2 {
		t.Errorf("stored status %s, failures %+v: want failed with both writes named", back.Status, back.Failures)
	}
}

func TestProfile_SaysWhenTheWindowOverran(t *testing.T) {
	// The middle heap snapshot takes a second: the window runs well past
	// the 300ms asked, which the run says in a warning (added while the
	// result is put together, so this also checks those are kept).
	var heaps atomic.Int32
	mux := pprofMux(map[string]http.HandlerFunc{
		"/debug/pprof/heap": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("gc") == "1" && heaps.Add(1) == 2 {
				time.Sleep(time.Second)
			}
			pprof.Handler("heap").ServeHTTP(w, r)
		},
	})
	srv := serve(t, mux)
	res, _, err := Profile(t.Context(), Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: 300 * time.Millisecond, Snapshots: 3, OutDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range res.Warnings {
		found = found || strings.Contains(w, "not the 300ms asked")
	}
	if !found || res.Window.DurationSeconds < 1 {
		t.Errorf("window %.3fs, warnings %q: want a window over 1s and a warning that it overran", res.Window.DurationSeconds, res.Warnings)
	}
}

// TestProfile_LostTargetReportsOnlyWhatWasMeasured loses the target
// after the window's first snapshot: what needed the later ones is absent
// and says why, not shown as a zero.
func TestProfile_LostTargetReportsOnlyWhatWasMeasured(t *testing.T) {
	h := &hoard{}
	var heaps atomic.Int64
	var srv *httptest.Server
	// The service dies under the window's load, when the second heap
	// snapshot is asked for: the window has its first snapshot only. It
	// waits for the load's first request to be answered before it dies,
	// so that the load did start, however slow the machine.
	heap := pprof.Handler("heap")
	worked := make(chan struct{})
	var once sync.Once
	srv = httptest.NewServer(pprofMux(map[string]http.HandlerFunc{
		"/work": func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			once.Do(func() { close(worked) })
		},
		"/debug/pprof/heap": func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if q.Get("gc") == "1" && q.Get("debug") == "" && heaps.Add(1) == 2 {
				select {
				case <-worked:
				case <-time.After(10 * time.Second):
				}
				go func() {
					srv.CloseClientConnections()
					srv.Listener.Close()
				}()
				http.Error(w, "gone", http.StatusServiceUnavailable)
				return
			}
			heap.ServeHTTP(w, r)
		},
	}))
	defer srv.Close()
	// Something in use before the window, larger than the sampling
	// interval so that the one snapshot surely samples it: else whether
	// the test process holds anything sampled at that moment is chance.
	h.keep(1 << 20)
	res, dir, err := Profile(t.Context(), Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: time.Second, OutDir: t.TempDir(),
		Load: &load.Options{Targets: []load.Request{{Method: "GET", URL: srv.URL + "/work"}}, Rate: 200},
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if res.Status != result.StatusPartial {
		t.Fatalf("status %s, want partial", res.Status)
	}
	if res.PerRequest != nil {
		t.Errorf("per_request %+v without the window's closing snapshot", *res.PerRequest)
	}
	for _, figure := range []string{result.FigurePerRequest, result.FigureWindowMemStats, result.FigureHeapGrowth} {
		if why, ok := res.UnmeasuredReason(figure); !ok || why == "" {
			t.Errorf("unmeasured %+v: want %s with a reason", res.Unmeasured, figure)
		}
	}
	var summary, md strings.Builder
	if err := report.Summary(&summary, res, dir); err != nil {
		t.Fatal(err)
	}
	if err := report.Markdown(&md, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Per request: not measured: ", "GC: unknown: MemStats at the window's end were not collected", "growth not measured: only the heap snapshot at the window's start", "Largest in use at the last snapshot collected"} {
		if !strings.Contains(summary.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, summary.String())
		}
	}
	for _, unwanted := range []string{"Per request: 0 B", "MemStats counts 0 B", "no GC cycle measured", "per-request figures include"} {
		if strings.Contains(summary.String(), unwanted) {
			t.Errorf("summary shows %q as if measured:\n%s", unwanted, summary.String())
		}
	}
	if !strings.Contains(md.String(), "## MemStats at the window's start (its end was not collected)") {
		t.Errorf("report.md does not say its MemStats are the window's start:\n%s", md.String())
	}
}

// TestProfile_UntilConfidentKeepsTheWindowOpen profiles a service whose
// live heap grows fast while its heap profile samples so rarely that no
// site can be placed: the window stays open, a snapshot interval at a
// time under the same load, up to MaxDuration, and says why.
func TestProfile_UntilConfidentKeepsTheWindowOpen(t *testing.T) {
	// One sample per 256 MiB: the growth below is never placed.
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 256 << 20
	h := &hoard{}
	srv := serve(t, pprofMux(map[string]http.HandlerFunc{"/work": h.ServeHTTP}))
	res, _, err := Profile(t.Context(), Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: time.Second, Snapshots: 3, OutDir: t.TempDir(),
		Load:           &load.Options{Targets: []load.Request{{Method: "GET", URL: srv.URL + "/work"}}, Rate: 100},
		UntilConfident: true, MaxDuration: 2 * time.Second,
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if res.Status != result.StatusComplete {
		t.Fatalf("status %s: %+v", res.Status, res.Failures)
	}
	if res.Window.ExtendedSeconds != 1 || !strings.Contains(res.Window.Extended, "the live heap grew") {
		t.Errorf("window %+v: want it kept open 1s more, saying why", res.Window)
	}
	if n := len(res.HeapGrowth.Snapshots); n != 5 {
		t.Errorf("%d snapshots, want 3 and one per 500ms interval up to 2s", n)
	}
	if res.Window.DurationSeconds < 1.9 || res.Load.DurationSeconds < 1.5 {
		t.Errorf("window %.2fs, load %.2fs: want both to cover the 2s", res.Window.DurationSeconds, res.Load.DurationSeconds)
	}
	if res.Load.Interrupted {
		t.Error("the load the run stopped at the window's end is marked interrupted")
	}
	var grows bool
	for _, f := range res.Findings {
		grows = grows || f.ID == "leak.live-growth" || f.ID == "leak.inuse-growth"
	}
	if !grows {
		t.Errorf("no leak finding for a heap growing 6 MiB/s; notes %v", res.DiagnosisNotes)
	}
	runtime.KeepAlive(h)
}

func TestProfile_LeanKeepsProfilesAndLeavesOutTheDrawings(t *testing.T) {
	srv := serve(t, pprofMux(nil))
	for _, lean := range []bool{false, true} {
		res, dir, err := Profile(t.Context(), Config{
			Target: target.Options{BaseURL: srv.URL}, Duration: 300 * time.Millisecond, OutDir: t.TempDir(), Lean: lean,
		})
		if err != nil {
			t.Fatalf("Profile(lean %v): %v", lean, err)
		}
		_, htmlErr := os.Stat(filepath.Join(dir, "report.html"))
		_, mdErr := os.Stat(filepath.Join(dir, "report.md"))
		flames, _ := filepath.Glob(filepath.Join(dir, "flame", "*"))
		if lean != (htmlErr != nil) || lean != (len(flames) == 0) || lean != (res.Files.HTMLReport == "") {
			t.Errorf("lean %v: report.html stat %v, %d flame files, HTMLReport %q", lean, htmlErr, len(flames), res.Files.HTMLReport)
		}
		// A lean run is what a store keeps: compact.
		if lean != (mdErr != nil) || lean != (res.Files.Report == "") {
			t.Errorf("lean %v: report.md stat %v, Report %q", lean, mdErr, res.Files.Report)
		}
		summary := result.FileName
		if lean {
			summary = result.CompressedFileName
		}
		if _, err := os.Stat(filepath.Join(dir, summary)); err != nil {
			t.Errorf("lean %v: %v", lean, err)
		}
		back, err := rundir.Read(dir)
		if err != nil {
			t.Fatalf("lean %v: read the run back: %v", lean, err)
		}
		if back.TopFor("alloc_space") == nil || len(back.Profiles) == 0 {
			t.Errorf("lean %v: the run lost its profiles or top tables", lean)
		}
		if _, ok := endMemStats(filepath.Join(dir, back.Files.MemStats)); !ok {
			t.Errorf("lean %v: %s does not read back", lean, back.Files.MemStats)
		}
		for _, p := range back.Profiles {
			if _, err := pprofx.Parse(mustRead(t, filepath.Join(dir, p.Path)), 0); err != nil {
				t.Errorf("lean %v: %s: %v", lean, p.Path, err)
			}
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProgress_String(t *testing.T) {
	tests := []struct {
		p    Progress
		want string
	}{
		{Progress{Elapsed: 2400 * time.Millisecond, Total: 10 * time.Second}, "window 2s/10s"},
		{Progress{Elapsed: 3 * time.Second, Total: 10 * time.Second, Requests: 1200}, "window 3s/10s, 1200 requests"},
		{Progress{Elapsed: 3 * time.Second, Total: 10 * time.Second, Requests: 1200, Errors: 4}, "window 3s/10s, 1200 requests (4 errors)"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.p, got, tt.want)
		}
	}
}
