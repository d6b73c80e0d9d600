package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/result"
)

// countingServer serves "ok" on 127.0.0.1 and counts requests by path.
type countingServer struct {
	*httptest.Server
	mu     sync.Mutex
	paths  map[string]int
	bodies map[string]int
	conns  atomic.Int64
}

func newCountingServer(t *testing.T) *countingServer {
	t.Helper()
	s := &countingServer{paths: map[string]int{}, bodies: map[string]int{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.paths[r.Method+" "+r.URL.RequestURI()]++
		s.bodies[string(body)+" "+r.Header.Get("X-Test")]++
		s.mu.Unlock()
		w.Write([]byte("ok"))
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func TestLoad_ErrorsAreOneLineWithExitCode2(t *testing.T) {
	srv := newCountingServer(t)
	dir := t.TempDir()
	badTargets := filepath.Join(dir, "bad-targets.txt")
	os.WriteFile(badTargets, []byte("GET "+srv.URL+"/a\n\nX-Orphan: 1\n"), 0o644)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no URL", []string{"load", "--rate", "10"}, "load takes URL (or --targets FILE)"},
		{"malformed URL", []string{"load", "http://[::1/", "--rate", "10"}, "missing ']' in host"},
		{"relative URL", []string{"load", "127.0.0.1:8080/x", "--rate", "10"}, "not absolute"},
		{"unsupported scheme", []string{"load", "ftp://127.0.0.1/", "--rate", "10"}, `scheme "ftp" is not http or https`},
		{"placeholder in host", []string{"load", "http://h{seq}/", "--rate", "10"}, "before the path"},
		{"unknown placeholder", []string{"load", srv.URL + "/{id}", "--rate", "10"}, "unknown placeholder {id}"},
		{"missing pick file", []string{"load", srv.URL + "/{pick:" + filepath.Join(dir, "nope") + "}", "--rate", "10"}, "read values"},
		{"no model", []string{"load", srv.URL}, "give --rate R (open model, requests per second) or --connections N"},
		{"zero rate", []string{"load", srv.URL, "--rate", "0"}, "no load model"},
		{"negative rate", []string{"load", srv.URL, "--rate", "-5"}, "--rate -5"},
		{"both models", []string{"load", srv.URL, "--rate", "10", "--connections", "2"}, "--rate and --connections both set"},
		{"max in flight in the closed model", []string{"load", srv.URL, "--connections", "2", "--max-in-flight", "4"}, "--max-in-flight bounds the open model"},
		{"ramp in the closed model", []string{"load", srv.URL, "--connections", "2", "--ramp", "1s"}, "--ramp applies to the open model"},
		{"ramp longer than the run", []string{"load", srv.URL, "--rate", "10", "--ramp", "1m"}, "ramp 1m0s is longer than the 10s run"},
		{"zero timeout", []string{"load", srv.URL, "--rate", "10", "--timeout", "0s"}, "--timeout"},
		{"both protocols", []string{"load", srv.URL, "--rate", "10", "--http1", "--http2"}, "--http1 and --http2 both set"},
		{"unreadable body file", []string{"load", srv.URL, "--rate", "10", "--body-file", filepath.Join(dir, "missing.json")}, "--body-file: open"},
		{"body and body file", []string{"load", srv.URL, "--rate", "10", "--body", "x", "--body-file", badTargets}, "--body and --body-file both set"},
		{"missing targets file", []string{"load", "--targets", filepath.Join(dir, "missing.txt"), "--rate", "10"}, "--targets: open"},
		{"malformed targets file", []string{"load", "--targets", badTargets, "--rate", "10"}, "targets line 3"},
		{"bad header", []string{"load", srv.URL, "--rate", "10", "-H", "no colon"}, "Name: value"},
		{"bad method", []string{"load", srv.URL, "--rate", "10", "-X", "GE T"}, `method "GE T"`},
		{"bad format", []string{"load", srv.URL, "--rate", "10", "--format", "yaml"}, "format"},
		{"unreachable target", []string{"load", closedURL, "--rate", "10"}, "cannot reach"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantUsageError(t, heapscope(t, tt.args...), tt.wantErr)
		})
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.paths) != 0 {
		t.Errorf("bad command lines sent requests: %v", srv.paths)
	}
}

func TestLoad_OpenModelTable(t *testing.T) {
	srv := newCountingServer(t)
	got := heapscope(t, "load", srv.URL+"/items/{seq}", "--rate", "100", "--duration", "500ms", "--series")
	if got.code != exitOK {
		t.Fatalf("exit %d, stderr: %s", got.code, got.stderr)
	}
	for _, want := range []string{
		"GET " + srv.URL + "/items/{seq}: open model, 100/s asked, 500.0ms, HTTP/1.1",
		"requests      50 sent, 50 completed",
		"rate          100/s (asked 100/s)",
		"success       100.00 %",
		"status codes  200 × 50",
		"errors        none",
	} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, got.stdout)
		}
	}
	// Column widths follow the values, and a busy machine may send some
	// requests late: the table says which, in either case.
	for _, want := range []string{
		`(?m)^ schedule      (kept: lag p99|LATE: the rate was kept, but)`,
		`(?m)^ latency +min +mean +p50 +p90 +p99 +p99\.9 +max$`,
		`(?m)^ +second +sent +done +errors +p50 +p90 +p99 +max +max lag$`,
	} {
		if !regexp.MustCompile(want).MatchString(got.stdout) {
			t.Errorf("stdout does not match %s:\n%s", want, got.stdout)
		}
	}
	for _, line := range strings.Split(got.stdout, "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("line %q ends with a blank", line)
		}
	}
	if got.stderr != "" {
		t.Errorf("stderr %q, want nothing when it is not a terminal", got.stderr)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.paths) != 50 {
		t.Errorf("server saw %d distinct paths, want /items/0 … /items/49", len(srv.paths))
	}
}

func TestLoad_ClosedModelJSON(t *testing.T) {
	srv := newCountingServer(t)
	got := heapscope(t, "load", srv.URL+"/x", "-X", "POST", "-H", "X-Test: yes", "--body", "abc",
		"--connections", "3", "--requests", "60", "--format", "json")
	if got.code != exitOK {
		t.Fatalf("exit %d, stderr: %s", got.code, got.stderr)
	}
	var l result.Load
	if err := json.Unmarshal([]byte(got.stdout), &l); err != nil {
		t.Fatalf("stdout is not a load result: %v\n%s", err, got.stdout)
	}
	if l.Model != "closed" || l.Connections != 3 || l.Requests != 60 || l.Completed != 60 || l.SuccessRatio != 1 ||
		l.Method != "POST" || l.StatusCodes["200"] != 60 || l.Lag != nil || l.BytesOut == 0 {
		t.Errorf("result %+v, want 60 POSTs over 3 connections, all 200", l)
	}
	if n := srv.conns.Load(); n != 3 {
		t.Errorf("server saw %d connections, want 3", n)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.paths["POST /x"] != 60 || srv.bodies["abc yes"] != 60 {
		t.Errorf("server saw %v with bodies %v, want 60 POST /x with body abc and header X-Test", srv.paths, srv.bodies)
	}
}

func TestLoad_TargetsFile(t *testing.T) {
	srv := newCountingServer(t)
	dir := t.TempDir()
	body := filepath.Join(dir, "item.json")
	os.WriteFile(body, []byte(`{"id":1}`), 0o644)
	ids := filepath.Join(dir, "ids.txt")
	os.WriteFile(ids, []byte("a\nb\nc\n"), 0o644)
	targets := filepath.Join(dir, "targets.txt")
	os.WriteFile(targets, []byte("GET /items/{pick:"+ids+"}\n\nPOST "+srv.URL+"/items\nX-Test: own\n@"+body+"\n"), 0o644)
	got := heapscope(t, "load", srv.URL, "--targets", targets, "-H", "X-Test: global", "--connections", "2", "--requests", "40")
	if got.code != exitOK {
		t.Fatalf("exit %d, stderr: %s", got.code, got.stderr)
	}
	if !strings.Contains(got.stdout, "2 requests round-robin, first GET "+srv.URL+"/items/{pick:") {
		t.Errorf("heading does not name the targets:\n%s", got.stdout)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if n := srv.paths["GET /items/a"] + srv.paths["GET /items/b"] + srv.paths["GET /items/c"]; n != 20 || srv.paths["POST /items"] != 20 {
		t.Errorf("server saw %v, want 20 GETs of the picked ids and 20 POSTs", srv.paths)
	}
	if srv.bodies[`{"id":1} own`] != 20 || srv.bodies[" global"] != 20 {
		t.Errorf("bodies and headers %v, want the file's body and header on the POSTs, the global header on the GETs", srv.bodies)
	}
}

func TestLoad_ProgressWhenForced(t *testing.T) {
	srv := newCountingServer(t)
	got := heapscope(t, "load", srv.URL, "--rate", "50", "--duration", "2500ms", "--progress")
	if got.code != exitOK {
		t.Fatalf("exit %d, stderr: %s", got.code, got.stderr)
	}
	lines := strings.Split(strings.TrimSpace(got.stderr), "\n")
	// One line a second at most, and the last with the final counts.
	if len(lines) < 2 || len(lines) > 4 {
		t.Fatalf("progress lines %q, want about one a second", lines)
	}
	if !strings.HasPrefix(lines[0], "load ") || !strings.Contains(lines[0], "/2.5s") || !strings.Contains(lines[0], "errors") {
		t.Errorf("progress line %q, want elapsed/total, rate and errors", lines[0])
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "125 requests") {
		t.Errorf("last progress line %q, want the final 125 requests", last)
	}
}

func TestLoad_InterruptPrintsResultsSoFar(t *testing.T) {
	srv := newCountingServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := execute(ctx, []string{"load", srv.URL, "--rate", "100", "--duration", "1m", "--format", "json"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d; stderr: %s", code, exitInterrupted, stderr.String())
	}
	var l result.Load
	if err := json.Unmarshal(stdout.Bytes(), &l); err != nil {
		t.Fatalf("stdout is not a load result: %v\n%s", err, stdout.String())
	}
	if !l.Interrupted || l.Requests < 20 || l.Requests > 100 || l.DurationSeconds > 5 {
		t.Errorf("result %+v, want the requests of the first 0.7s, marked interrupted", l)
	}
	if msg := stderr.String(); !strings.Contains(msg, "interrupted after") || strings.Count(msg, "\n") != 1 {
		t.Errorf("stderr %q, want one line saying the run was interrupted", msg)
	}
}

// TestLoad_StalledServiceEndsOnTimeAndExits3 loads a service that
// answers nothing: the run ends about EndGrace after its window although
// the timeout is longer, the latency shows the wait, and no success is
// exit 3.
func TestLoad_StalledServiceEndsOnTimeAndExits3(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	got := heapscope(t, "load", srv.URL+"/", "--rate", "50", "--duration", "1s", "--timeout", "10s", "--format", "json")
	took := time.Since(start)
	if got.code != exitPartial || !strings.Contains(got.stderr, "none of the") || !strings.Contains(got.stderr, "unfinished") {
		t.Fatalf("exit %d, stderr %q: want exit 3 saying no request succeeded", got.code, got.stderr)
	}
	if limit := time.Second + load.EndGrace + time.Second; took > limit {
		t.Errorf("load took %s with a 1s window, want at most %s", took, limit)
	}
	var l result.Load
	if err := json.Unmarshal([]byte(got.stdout), &l); err != nil {
		t.Fatalf("stdout is not load JSON: %v\n%s", err, got.stdout)
	}
	if l.Requests == 0 || l.LatencySeconds.Min < load.EndGrace.Seconds() || l.LatencySeconds.P50 < load.EndGrace.Seconds() {
		t.Errorf("%d requests, latency %+v: want every request's wait, at least %s, in the latency", l.Requests, l.LatencySeconds, load.EndGrace)
	}
}

func TestProfile_LoadModels(t *testing.T) {
	var hits atomic.Int64
	srv := pprofServer(t, map[string]http.HandlerFunc{
		"/work": func(w http.ResponseWriter, r *http.Request) { hits.Add(1); w.Write([]byte("ok")) },
	})
	dir := t.TempDir()
	targets := filepath.Join(dir, "targets.txt")
	os.WriteFile(targets, []byte("GET /work?id={seq}\n\nPOST /work\n"), 0o644)
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, l *result.Load)
	}{
		{"closed model", []string{"--load", "GET /work?id={rand:100}", "--connections", "2"}, func(t *testing.T, l *result.Load) {
			if l.Model != "closed" || l.Connections != 2 || l.Completed == 0 || l.Errors != 0 {
				t.Errorf("load %+v, want the closed model over 2 connections", l)
			}
		}},
		{"targets file in the open model", []string{"--targets", targets, "--rate", "50"}, func(t *testing.T, l *result.Load) {
			// The load runs as long as the window does, which a busy
			// machine stretches past its second; it starts once its
			// workers are ready, a few milliseconds into the window.
			due := 50 * l.DurationSeconds
			if l.Model != "open" || l.Targets != 2 || l.RequestedRate != 50 || l.DurationSeconds < 0.9 ||
				math.Abs(float64(l.Requests)-due) > 2 || l.Errors != 0 || l.Lag == nil {
				t.Errorf("load %+v, want 50/s of 2 targets over the window", l)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"profile", srv.URL, "--duration", "1s", "--no-cpu", "--snapshots", "2", "--out", out, "--format", "json"}, tt.args...)
			got := heapscope(t, args...)
			if got.code != exitOK {
				t.Fatalf("exit %d, stderr: %s", got.code, got.stderr)
			}
			var res result.Run
			if err := json.Unmarshal([]byte(got.stdout), &res); err != nil {
				t.Fatal(err)
			}
			if res.Load == nil {
				t.Fatal("no load in the result")
			}
			tt.check(t, res.Load)
			dirs, _ := filepath.Glob(filepath.Join(out, "*", "load.json"))
			if len(dirs) != 1 {
				t.Fatalf("load.json files %v, want one", dirs)
			}
			data, _ := os.ReadFile(dirs[0])
			var l result.Load
			if err := json.Unmarshal(data, &l); err != nil || l.Requests != res.Load.Requests || len(l.Series) == 0 {
				t.Errorf("load.json %s: %v, want the run's load with its series", data, err)
			}
		})
	}
	if hits.Load() == 0 {
		t.Error("the service saw no load")
	}
}

func TestProfile_LoadFlagErrors(t *testing.T) {
	srv := pprofServer(t, nil)
	out := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"connections without a request", []string{"--connections", "4"}, "--connections applies to the load: give --load"},
		{"load and targets", []string{"--load", "GET /x", "--targets", "t.txt"}, "--load and --targets both set"},
		{"both models", []string{"--load", "GET /x", "--rate", "10", "--connections", "2"}, "--rate and --connections both set"},
		{"bad targets file", []string{"--targets", filepath.Join(out, "missing.txt")}, "--targets: open"},
		{"bad load timeout", []string{"--load", "GET /x", "--load-timeout", "-1s"}, `"--load-timeout" flag: -1s is negative`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := heapscope(t, append([]string{"profile", srv.URL, "--duration", "1s", "--out", out}, tt.args...)...)
			if got.code != exitUsage || !strings.Contains(got.stderr, tt.wantErr) || strings.Count(got.stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line containing %q", got.code, got.stderr, tt.wantErr)
			}
		})
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("failed runs left %d entries in %s", len(entries), out)
	}
}
