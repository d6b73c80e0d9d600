package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"encoding/pem"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
)

func pprofServer(t *testing.T, override map[string]http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	if override["/debug/pprof/profile"] == nil {
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	for path, h := range override {
		mux.HandleFunc(path, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// heapProfileFile writes a heap profile of this test process to a file.
func heapProfileFile(t *testing.T) string {
	t.Helper()
	return writeProfileFile(t, "heap")
}

// overflowingProfile writes a valid heap profile whose two samples of
// MaxInt64 bytes add up beyond an int64, and returns its path.
func overflowingProfile(t *testing.T) string {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "main.big", Filename: "big.go"}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:     512 << 10,
		Function:   []*profile.Function{fn},
	}
	for i := range 2 {
		loc := &profile.Location{ID: uint64(i + 1), Address: uint64(0x1000 + i), Line: []profile.Line{{Function: fn, Line: int64(i + 1)}}}
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{1, math.MaxInt64}})
	}
	path := filepath.Join(t.TempDir(), "overflow.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	return path
}

// goneProcessPID returns the pid of a process that has exited.
func goneProcessPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	return cmd.Process.Pid
}

func TestExecute_ErrorsAreOneLineWithExitCode2(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	noPprof := httptest.NewServer(http.NotFoundHandler())
	defer noPprof.Close()
	htmlBody := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<!doctype html><title>login</title>"))
	}))
	defer htmlBody.Close()
	live := pprofServer(t, nil)
	out := t.TempDir()
	heap := heapProfileFile(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pb.gz")
	os.WriteFile(garbage, []byte("this is not a profile"), 0o644)

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unreachable target", []string{"profile", closedURL, "--duration", "1s", "--out", out}, "cannot reach"},
		{"target without pprof", []string{"profile", noPprof.URL, "--duration", "1s", "--out", out}, "404"},
		{"non-pprof body", []string{"profile", htmlBody.URL, "--duration", "1s", "--out", out}, "not a pprof profile"},
		{"negative duration", []string{"profile", live.URL, "--duration", "-5s", "--out", out}, "--duration"},
		{"bad duration", []string{"profile", live.URL, "--duration", "soon", "--out", out}, "invalid argument"},
		{"pid that is gone", []string{"profile", live.URL, "--duration", "1s", "--pid", strconv.Itoa(goneProcessPID(t)), "--out", out}, "not found"},
		{"bad header", []string{"profile", live.URL, "-H", "no colon", "--out", out}, "Name: value"},
		{"bad load", []string{"profile", live.URL, "--load", "GET /x?{nope}", "--out", out}, "--load"},
		{"bad format", []string{"profile", live.URL, "--format", "yaml", "--out", out}, "format"},
		{"no target", []string{"profile"}, "TARGET"},
		{"version as markdown", []string{"version", "--format", "markdown"}, "text or json"},
		{"snapshots and interval", []string{"profile", live.URL, "--snapshots", "3", "--interval", "1s", "--out", out}, "give one"},
		{"interval too short", []string{"profile", live.URL, "--interval", "1ms", "--out", out}, "too short"},
		{"warm-up without load", []string{"profile", live.URL, "--warmup", "1s", "--out", out}, "--warmup drives the load"},
		{"negative warm-up", []string{"profile", live.URL, "--warmup", "-1s", "--load", "GET /", "--out", out}, `"--warmup" flag: -1s is negative`},
		{"unknown flag", []string{"profile", live.URL, "--frobnicate"}, "unknown flag"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"unknown example", []string{"demo", "--example", "nope"}, "leaky"},
		{"compare flag after --", []string{"compare", "a", "--", "b", "--format", "json"}, "put flags before the runs"},
		{"top of a missing file", []string{"top", filepath.Join(out, "missing.pb.gz")}, "no such file"},
		{"top of garbage", []string{"top", garbage}, "not a pprof profile"},
		{"diagnose of garbage", []string{"diagnose", garbage}, "not a pprof profile"},
		{"diagnose of a large file of zeros", []string{"diagnose", zerosFile(t, 8<<20)}, "not a pprof profile"},
		{"top of a directory", []string{"top", t.TempDir()}, "is a directory: give a profile file"},
		{"top of totals beyond int64", []string{"top", overflowingProfile(t)}, "beyond the range of int64"},
		{"diagnose of totals beyond int64", []string{"diagnose", overflowingProfile(t)}, "beyond the range of int64"},
		{"top with unknown sample type", []string{"top", heap, "--sample", "bogus"}, "alloc_objects, alloc_space, inuse_objects, inuse_space"},
		{"top with negative n", []string{"top", heap, "-n", "-1"}, "-n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantUsageError(t, heapscope(t, tt.args...), tt.wantErr)
		})
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 0 {
		t.Errorf("failed runs left %d entries in %s", len(entries), out)
	}
}

func TestProfile_PartialRunExitsWith3(t *testing.T) {
	srv := pprofServer(t, map[string]http.HandlerFunc{
		"/debug/pprof/goroutine": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "disabled", http.StatusForbidden)
		},
	})
	out := t.TempDir()
	got := heapscope(t, "profile", srv.URL, "--duration", "1s", "--no-cpu", "--out", out, "--format", "json")
	if got.code != exitPartial {
		t.Fatalf("exit code %d, want %d; stderr: %s", got.code, exitPartial, got.stderr)
	}
	var res result.Run
	if err := json.Unmarshal([]byte(got.stdout), &res); err != nil {
		t.Fatalf("stdout is not result JSON: %v\n%s", err, got.stdout)
	}
	if res.Status != result.StatusPartial || len(res.Failures) != 1 || res.Failures[0].Step != "goroutine profile" {
		t.Errorf("status %s failures %+v, want partial with the goroutine profile", res.Status, res.Failures)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(dirs) != 1 {
		t.Fatalf("run directories %v, want one", dirs)
	}
	stored, err := rundir.Read(dirs[0])
	if err != nil || stored.Status != result.StatusPartial {
		t.Errorf("stored run %v, %v: want partial", stored, err)
	}
	if !strings.Contains(got.stderr, "partial") {
		t.Errorf("stderr does not say the run is partial: %s", got.stderr)
	}
}

func TestProfile_SummaryFormats(t *testing.T) {
	srv := pprofServer(t, nil)
	for _, tt := range []struct {
		format string
		want   []string
	}{
		{"text", []string{"heapscope profiled " + srv.URL, "GC:", "RSS:", "Report: "}},
		{"markdown", []string{"# heapscope run: " + srv.URL, "## Summary", "## Top inuse_space"}},
	} {
		t.Run(tt.format, func(t *testing.T) {
			got := heapscope(t, "profile", srv.URL, "--duration", "300ms", "--no-cpu", "--out", t.TempDir(), "--format", tt.format)
			if got.code != exitOK {
				t.Fatalf("exit %d: %s", got.code, got.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(got.stdout, w) {
					t.Errorf("%s summary lacks %q:\n%s", tt.format, w, got.stdout)
				}
			}
		})
	}
}

func TestTop(t *testing.T) {
	heap := heapProfileFile(t)
	data, _ := os.ReadFile(heap)

	t.Run("json from stdin", func(t *testing.T) {
		got := heapscopeIn(t, string(data), "top", "-", "--sample", "inuse_space", "-n", "3", "--format", "json")
		if got.code != exitOK {
			t.Fatalf("exit %d: %s", got.code, got.stderr)
		}
		var tab result.TopTable
		if err := json.Unmarshal([]byte(got.stdout), &tab); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, got.stdout)
		}
		if tab.SampleType != "inuse_space" || tab.Unit != "bytes" || len(tab.Sites) == 0 || len(tab.Sites) > 3 {
			t.Errorf("table %+v, want up to 3 inuse_space sites", tab)
		}
		for i := 1; i < len(tab.Sites); i++ {
			if tab.Sites[i].Flat > tab.Sites[i-1].Flat {
				t.Errorf("sites not sorted by flat: %+v", tab.Sites)
			}
		}
	})
	t.Run("text sorted by cum", func(t *testing.T) {
		got := heapscope(t, "top", heap, "--cum", "-n", "5")
		if got.code != exitOK {
			t.Fatalf("exit %d: %s", got.code, got.stderr)
		}
		if !strings.Contains(got.stdout, "inuse_space: total") || !strings.Contains(got.stdout, "function") {
			t.Errorf("text table lacks its heading:\n%s", got.stdout)
		}
	})
	t.Run("gzip bomb", func(t *testing.T) {
		// 300 MiB of zeros as 300 gzip members of 1 MiB each, which a
		// gzip reader reads as one stream: compressing the 300 MiB
		// themselves takes most of a minute under the race detector, and
		// so does reading them, so heapscope as users build it reads them.
		var member bytes.Buffer
		zw, err := gzip.NewWriterLevel(&member, gzip.BestCompression)
		if err != nil {
			t.Fatal(err)
		}
		zw.Write(make([]byte, 1<<20))
		zw.Close()
		bomb := bytes.Repeat(member.Bytes(), 300)
		path := filepath.Join(t.TempDir(), "bomb.pb.gz")
		if err := os.WriteFile(path, bomb, 0o644); err != nil {
			t.Fatal(err)
		}
		bin, err := exampleExecutable()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd := exec.CommandContext(t.Context(), bin, "top", path)
		cmd.Stderr = &stderr
		err = cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(stderr.String(), "decompresses to more than") {
			t.Errorf("exit %d (%v), stderr %q: want 2 and a size error", code, err, stderr.String())
		}
	})
}

func TestVersion(t *testing.T) {
	got := heapscope(t, "version", "--format", "json")
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	var v report.Version
	if err := json.Unmarshal([]byte(got.stdout), &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if v.Version == "" || !strings.HasPrefix(v.GoVersion, "go") || v.Platform == "" {
		t.Errorf("version info %+v is incomplete", v)
	}
	text := heapscope(t, "version")
	if !strings.HasPrefix(text.stdout, "heapscope ") {
		t.Errorf("version text %q", text.stdout)
	}
}

func TestCompletion(t *testing.T) {
	tests := []struct {
		shell, marker string
	}{
		{"bash", "__start_heapscope"},
		{"zsh", "#compdef heapscope"},
		{"fish", "complete -c heapscope"},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			got := heapscope(t, "completion", tt.shell)
			if got.code != exitOK || !strings.Contains(got.stdout, tt.marker) {
				t.Fatalf("exit %d, %d bytes without %q: want a %s completion script", got.code, len(got.stdout), tt.marker, tt.shell)
			}
			if tt.shell == "bash" {
				check := exec.Command("bash", "-n")
				check.Stdin = strings.NewReader(got.stdout)
				if out, err := check.CombinedOutput(); err != nil {
					t.Errorf("bash -n on the script: %v\n%s", err, out)
				}
			}
		})
	}
	// The scripts ask heapscope itself for candidates.
	got := heapscope(t, "__complete", "pro")
	if got.code != exitOK || !strings.Contains(got.stdout, "profile") {
		t.Errorf("__complete pro: exit %d, %q: want profile among the candidates", got.code, got.stdout)
	}
	got = heapscope(t, "__complete", "demo", "--example", "")
	for _, name := range []string{"leaky", "kv-naive"} {
		if !strings.Contains(got.stdout, name) {
			t.Errorf("__complete demo --example: %q lacks %s", got.stdout, name)
		}
	}
}

func TestHelp_ListsOnlyWorkingCommands(t *testing.T) {
	got := heapscope(t, "--help")
	for _, cmd := range []string{"profile", "demo", "top", "version", "completion"} {
		if !strings.Contains(got.stdout, "  "+cmd) {
			t.Errorf("help does not list %s:\n%s", cmd, got.stdout)
		}
	}
	if strings.Contains(got.stdout, serveExampleName) {
		t.Errorf("help lists the hidden %s", serveExampleName)
	}
}

func TestProfile_InterruptExitsWith130AndKeepsTheRun(t *testing.T) {
	// The interrupt comes once the window is under way: the CPU profile
	// is asked for when it opens.
	ctx, cancel := context.WithCancel(t.Context())
	srv := pprofServer(t, map[string]http.HandlerFunc{
		"/debug/pprof/profile": func(w http.ResponseWriter, r *http.Request) {
			time.AfterFunc(200*time.Millisecond, cancel)
			pprof.Profile(w, r)
		},
	})
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := execute(ctx, []string{"profile", srv.URL, "--duration", "1m", "--out", out}, strings.NewReader(""), &stdout, &stderr)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d; stderr: %s", code, exitInterrupted, stderr.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(dirs) != 1 {
		t.Fatalf("run directories %v, want one", dirs)
	}
	res, err := rundir.Read(dirs[0])
	if err != nil || res.Status != result.StatusPartial {
		t.Fatalf("stored run %v, %v: want partial", res, err)
	}
	if !strings.Contains(stdout.String(), "not collected: window: interrupted") {
		t.Errorf("summary does not say the window was interrupted:\n%s", stdout.String())
	}
}

func TestProfile_ReachesRealServices(t *testing.T) {
	// pprof under /admin/pprof/, behind a bearer token, over https.
	mux := http.NewServeMux()
	mux.HandleFunc("/admin/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		// net/http/pprof finds the profile's name after /debug/pprof/.
		r.URL.Path = strings.Replace(r.URL.Path, "/admin/pprof/", "/debug/pprof/", 1)
		pprof.Index(w, r)
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"profile", srv.URL, "--duration", "200ms", "--no-cpu", "--pprof-path", "/admin/pprof/"}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"ca and token", []string{"--cacert", caFile, "-H", "Authorization: Bearer s3cret"}, exitOK, ""},
		{"insecure and token", []string{"--insecure", "-H", "Authorization: Bearer s3cret"}, exitOK, ""},
		{"no token", []string{"--insecure"}, exitUsage, "-H"},
		{"unknown CA", []string{"-H", "Authorization: Bearer s3cret"}, exitUsage, "--cacert"},
		{"wrong path", []string{"--insecure", "-H", "Authorization: Bearer s3cret", "--pprof-path", "/debug/pprof/"}, exitUsage, "--pprof-path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{}, base...), tt.args...)
			args = append(args, "--out", t.TempDir())
			got := heapscope(t, args...)
			if got.code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", got.code, tt.wantCode, got.stderr)
			}
			if tt.wantErr != "" && !strings.Contains(got.stderr, tt.wantErr) {
				t.Errorf("stderr %q does not mention %q", got.stderr, tt.wantErr)
			}
		})
	}
}

// zerosFile writes n zero bytes, one long line to a text reader, and
// returns its path.
func zerosFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "zeros.pb.gz")
	if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
