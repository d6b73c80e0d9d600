package view

import (
	"bytes"
	"context"
	"io"
	"net"
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
	return profiledRunDir(t, false)
}

// profiledRunDir is runDir, lean as a store keeps runs when asked.
func profiledRunDir(t *testing.T, lean bool) string {
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
		Lean: lean,
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

// localRequest is a request as a Server listening on 127.0.0.1:7070
// receives it: the Host names that address, and so does the connection's
// local address, which net/http puts in the request's context.
func localRequest(method, path string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, "http://127.0.0.1:7070"+path, body)
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7070}
	return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
}

func get(t *testing.T, h http.Handler, path string) response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest("GET", path, nil))
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

// A stored run is compact: no report.html, no flame graphs drawn, its
// result gzipped. The page draws the report and the flame graphs on
// demand and links the result as it is.
func TestServer_StoredRun(t *testing.T) {
	s, err := Open(profiledRunDir(t, true), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	tests := []struct {
		path  string
		ctype string
		body  []string
	}{
		{"/", "text/html", []string{`href="report"`, `href="run/result.json.gz"`, `href="flamegraph/heap-001"`, `href="pprof/allocs-delta/"`}},
		{"/report", "text/html", []string{`id="heap-chart"`, "Top sites"}},
		{"/run/result.json.gz", "application/gzip", nil},
		{"/flamegraph/heap-001", "text/html", []string{`class="hsflame"`}},
	}
	for _, tt := range tests {
		got := get(t, s, tt.path)
		if got.code != 200 || !strings.HasPrefix(got.ctype, tt.ctype) {
			t.Errorf("GET %s: %d %q, want 200 %s: %.300s", tt.path, got.code, got.ctype, tt.ctype, got.body)
		}
		for _, w := range tt.body {
			if !strings.Contains(got.body, w) {
				t.Errorf("GET %s lacks %q", tt.path, w)
			}
		}
	}
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
			s.ServeHTTP(rec, localRequest("GET", "/pprof/"+s.Profiles()[0].Name+"/top", nil))
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

// TestServer_HostileRun serves a run directory someone else made, with
// links planted in it, on a real 127.0.0.1 listener, and sends it what a
// web page in the user's browser could: nothing outside the run comes
// back, and requests of other origins are refused.
func TestServer_HostileRun(t *testing.T) {
	dir := runDir(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("SECRET"), 0o644)
	// A profile outside the run, behind a link where the run keeps its
	// goroutine profile: its download must not be served.
	other, err := os.ReadFile(heapProfile)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(outside, "other.pb.gz"), other, 0o644)
	goroutine := filepath.Join(dir, "profiles", "goroutine.pb.gz")
	os.Remove(goroutine)
	for link, target := range map[string]string{
		"passwd-link":              "/etc/passwd",
		"dir-link":                 outside,
		"profiles/goroutine.pb.gz": filepath.Join(outside, "other.pb.gz"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	tests := []struct {
		name, method, path, host string
		headers                  map[string]string
		code                     int
	}{
		{"a symlink to /etc/passwd", "GET", "/run/passwd-link", "", nil, 404},
		{"a symlink to a directory outside", "GET", "/run/dir-link/", "", nil, 404},
		{"a file in a directory outside", "GET", "/run/dir-link/secret.txt", "", nil, 404},
		{"a directory of the run: no listing", "GET", "/run/profiles/", "", nil, 404},
		{"a profile linked from outside: download", "GET", "/pprof/goroutine/download", "", nil, 500},
		{"a profile linked from outside: flame graph", "GET", "/flamegraph/goroutine", "", nil, 500},
		{"the run's own report", "GET", "/run/report.html", "", nil, 200},
		{"the index at localhost", "GET", "/", "localhost:" + port, nil, 200},
		{"a rebound Host", "GET", "/run/report.html", "evil.example.com:" + port, nil, http.StatusMisdirectedRequest},
		{"a rebound Host on pprof's UI", "GET", "/pprof/heap-000/top", "evil.example.com", nil, http.StatusMisdirectedRequest},
		{"a cross-origin POST to pprof's settings", "POST", "/pprof/heap-000/saveconfig?config=x", "", map[string]string{"Origin": "http://evil.example.com", "Sec-Fetch-Site": "cross-site"}, 403},
		{"a cross-site fetch of an expensive page", "GET", "/pprof/heap-000/flamegraph", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.code {
				t.Errorf("%s %s (Host %q): %d, want %d: %.200s", tt.method, tt.path, tt.host, resp.StatusCode, tt.code, body)
			}
			if strings.Contains(string(body), "SECRET") || strings.Contains(string(body), "root:") || bytes.Equal(body, other) {
				t.Errorf("%s %s served what lies outside the run: %.100q", tt.method, tt.path, body)
			}
			for name, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
				if got := resp.Header.Get(name); got != want {
					t.Errorf("%s %s: %s = %q, want %q", tt.method, tt.path, name, got, want)
				}
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("%s %s: Content-Security-Policy %q does not forbid framing", tt.method, tt.path, csp)
			}
		})
	}
}
