package view

import (
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/target"
)

// Profiles written by a real runtime, for the flame package's tests.
const (
	heapProfile = "../flame/testdata/heap-after.pb.gz"
	cpuProfile  = "../flame/testdata/cpu.pb.gz"
)

// runDir makes a real run directory: a short profile, under load, of an
// httptest server mounting net/http/pprof whose handler keeps what it
// allocates, so every heap profile of the run has samples.
func runDir(t *testing.T) string {
	t.Helper()
	var mu sync.Mutex
	var kept [][]byte
	keep := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		kept = append(kept, make([]byte, n))
	}
	for range 32 {
		keep(256 << 10)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) { keep(64 << 10) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, dir, err := run.Profile(t.Context(), run.Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: 500 * time.Millisecond, OutDir: t.TempDir(),
		Load: &load.Options{Targets: []load.Request{{Method: "GET", URL: srv.URL + "/work"}}, Rate: 200},
	})
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	return dir
}

type response struct {
	code            int
	ctype, location string
	body            string
}

func get(t *testing.T, h http.Handler, path string) response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return response{code: rec.Code, ctype: rec.Header().Get("Content-Type"), location: rec.Header().Get("Location"), body: rec.Body.String()}
}

func TestServer_RunDirectory(t *testing.T) {
	dir := runDir(t)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	names := map[string]bool{}
	for _, p := range s.Profiles() {
		names[p.Name] = true
	}
	for _, want := range []string{"heap-000", "heap-001", "allocs-delta", "goroutine"} {
		if !names[want] {
			t.Errorf("profiles %v lack %s", names, want)
		}
	}

	tests := []struct {
		name, path string
		code       int
		ctype      string
		body       []string
	}{
		{"index", "/", 200, "text/html", []string{`href="run/report.html"`, `href="pprof/heap-000/"`, `href="pprof/allocs-delta/"`, `href="flamegraph/allocs-delta"`, `href="run/flame/inuse_space.svg"`}},
		{"report", "/run/report.html", 200, "text/html", []string{`id="heap-chart"`}},
		{"flame svg of the run", "/run/flame/inuse_space.svg", 200, "image/svg+xml", []string{"<svg"}},
		{"pprof root redirects to its flame graph", "/pprof/heap-001/", 301, "", nil},
		{"pprof flame graph", "/pprof/heap-001/flamegraph", 200, "text/html", []string{"inuse_space", `href="./top"`}},
		{"pprof top", "/pprof/allocs-delta/top", 200, "text/html", []string{"alloc_space"}},
		{"pprof peek", "/pprof/heap-001/peek?f=.", 200, "text/html", nil},
		{"pprof of goroutines", "/pprof/goroutine/top", 200, "text/html", []string{"goroutine"}},
		{"pprof without slash", "/pprof/heap-001", 301, "", nil},
		{"our flame graph", "/flamegraph/heap-001", 200, "text/html", []string{`class="hsflame"`}},
		{"unknown profile", "/pprof/nope/top", 404, "", []string{"no such profile"}},
		{"unknown flame graph", "/flamegraph/nope", 404, "", nil},
		{"outside the run", "/run/..%2f..%2f..%2fetc%2fpasswd", 404, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := get(t, s, tt.path)
			if got.code != tt.code {
				t.Fatalf("GET %s: %d, want %d: %.300s", tt.path, got.code, tt.code, got.body)
			}
			if !strings.HasPrefix(got.ctype, tt.ctype) {
				t.Errorf("GET %s: content type %q, want %s", tt.path, got.ctype, tt.ctype)
			}
			for _, w := range tt.body {
				if !strings.Contains(got.body, w) {
					t.Errorf("GET %s lacks %q", tt.path, w)
				}
			}
		})
	}
	if got := get(t, s, "/pprof/heap-001/"); got.location != "flamegraph" {
		t.Errorf("pprof root redirects to %q, want flamegraph (relative, under the profile's prefix)", got.location)
	}
	t.Run("download is the profile as stored", func(t *testing.T) {
		got := get(t, s, "/pprof/heap-000/download")
		if got.code != 200 || !strings.HasPrefix(got.body, "\x1f\x8b") {
			t.Errorf("download: %d, %q…, want a gzipped profile", got.code, got.body[:min(len(got.body), 8)])
		}
	})
}

func TestServer_Profile(t *testing.T) {
	s, err := Open(heapProfile, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if ps := s.Profiles(); len(ps) != 1 || ps[0].Name != "heap-after" || ps[0].Kind != "heap" {
		t.Fatalf("profiles %+v, want heap-after of kind heap", ps)
	}
	for path, want := range map[string]string{
		"/":                            `href="pprof/heap-after/"`,
		"/pprof/heap-after/flamegraph": "alloc_space",
		"/flamegraph/heap-after":       `class="hsflame"`,
		// pprof's source view reads the Go tree's own files.
		"/pprof/heap-after/source?f=regexp/syntax.%5C(%5C*compiler%5C).inst": "compile.go",
	} {
		got := get(t, s, path)
		if got.code != 200 || !strings.Contains(got.body, want) {
			t.Errorf("GET %s: %d, want 200 with %q", path, got.code, want)
		}
	}
	if got := get(t, s, "/run/result.json"); got.code != 404 {
		t.Errorf("GET /run/result.json of a bare profile: %d, want 404", got.code)
	}
}

// TestServer_PprofUIsConcurrently opens pprof's UI for several profiles
// at once: the driver's package state is reached one call at a time.
func TestServer_PprofUIsConcurrently(t *testing.T) {
	servers := make([]*Server, 0, 2)
	for _, path := range []string{heapProfile, cpuProfile} {
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, s)
	}
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Go(func() {
			s := servers[i%2]
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/pprof/"+s.Profiles()[0].Name+"/top", nil))
			codes[i] = rec.Code
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("request %d: %d", i, c)
		}
	}
}

func TestOpen_BadInput(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pb.gz")
	os.WriteFile(garbage, []byte("this is not a profile\n"), 0o644)
	empty := filepath.Join(dir, "empty.pb.gz")
	os.WriteFile(empty, nil, 0o644)
	notRun := filepath.Join(dir, "notrun")
	os.Mkdir(notRun, 0o755)
	tests := []struct {
		name, path, want string
	}{
		{"not a profile", garbage, "not a pprof profile"},
		{"empty file", empty, "empty input"},
		{"missing", filepath.Join(dir, "nope"), "open "},
		{"directory that is not a run", notRun, "not a (finished) heapscope run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(tt.path, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open(%s): %v, want an error with %q", tt.path, err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestProfileName(t *testing.T) {
	taken := map[string]bool{}
	tests := []struct{ path, want string }{
		{"profiles/heap-000.pb.gz", "heap-000"},
		{"profiles/cpu.pprof", "cpu"},
		{"other/heap-000.pb.gz", "heap-000-2"},
		{"we ird/na me?.pb.gz", "na_me_"},
		{"..pb.gz", "profile"},
	}
	for _, tt := range tests {
		if got := profileName(tt.path, taken); got != tt.want {
			t.Errorf("profileName(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestServer_RepeatedRun(t *testing.T) {
	// 8 MiB in use, so every heap snapshot has samples.
	var kept [][]byte
	for range 32 {
		kept = append(kept, make([]byte, 256<<10))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, dir, err := run.Profile(t.Context(), run.Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: 200 * time.Millisecond, Repeat: 2, OutDir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	names := map[string]string{}
	for _, p := range s.Profiles() {
		names[p.Name] = p.Path
	}
	for name, path := range map[string]string{"001-heap-000": "windows/001/profiles/heap-000.pb.gz", "002-goroutine": "windows/002/profiles/goroutine.pb.gz"} {
		if names[name] != path {
			t.Errorf("profile %s is %q, want %s (profiles %v)", name, names[name], path, names)
		}
	}
	index := get(t, s, "/")
	for _, want := range []string{`href="run/windows/001/report.html"`, `href="run/windows/002/report.html"`, `href="pprof/002-heap-001/"`} {
		if !strings.Contains(index.body, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	if got := get(t, s, "/pprof/002-heap-001/top"); got.code != 200 {
		t.Errorf("pprof top of a window's profile: %d", got.code)
	}
	if got := get(t, s, "/run/windows/001/report.html"); got.code != 200 {
		t.Errorf("a window's report.html: %d", got.code)
	}
	runtime.KeepAlive(kept)
}
