package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/result"
)

// TestProfile_RealModuleAtBuggyAndFixedVersions profiles a small service
// built on a public module at a release with a known leak and at the
// release that fixed it, fetched from the Go module proxy as a user's
// build fetches them, started as a user starts it (no GODEBUG, the
// runtime's default heap sampling rate) and loaded at 300 requests/s.
//
// github.com/gorilla/sessions before v1.2.0 keeps each request's session
// registry in github.com/gorilla/context's package-level map, keyed by
// the *http.Request. A handler that first shallow-copies its request with
// r.WithContext, as anything behind a context-setting middleware does,
// registers the copy, and context.ClearHandler clears only the original:
// every request stays in the map. v1.2.0 keeps the registry in
// r.Context() instead.
func TestProfile_RealModuleAtBuggyAndFixedVersions(t *testing.T) {
	// Exact versions, as in the user's go.mod. gorilla/context is the
	// service's own import (ClearHandler) at both; securecookie is what
	// both sessions releases require.
	versions := []struct {
		name, version string
		require       []string
	}{
		{"buggy", "v1.1.3", []string{"github.com/gorilla/sessions v1.1.3", "github.com/gorilla/context v1.1.1", "github.com/gorilla/securecookie v1.1.1"}},
		{"fixed", "v1.2.0", []string{"github.com/gorilla/sessions v1.2.0", "github.com/gorilla/context v1.1.1", "github.com/gorilla/securecookie v1.1.1"}},
	}
	tmpl, err := os.ReadFile(filepath.Join("testdata", "realmodule", "sessions", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}

	// Both builds, then both runs, side by side: each is mostly waiting
	// (on the proxy, on the window's clock).
	var wg sync.WaitGroup
	bins := make([]string, len(versions))
	errs := make([]error, len(versions))
	for i, v := range versions {
		wg.Go(func() {
			bins[i], errs[i] = buildModule(t.Context(), t.TempDir(), "example.com/sessionsvc", tmpl, v.require)
		})
	}
	wg.Wait()
	for i, v := range versions {
		if errs[i] != nil {
			t.Fatalf("build the service on gorilla/sessions %s: %v", v.version, errs[i])
		}
	}
	runs := make([]*result.Run, len(versions))
	for i := range versions {
		wg.Go(func() {
			var url string
			if url, errs[i] = startService(t, bins[i]); errs[i] == nil {
				runs[i], errs[i] = profileURL(t, url, "--duration", "20s", "--load", "GET /", "--rate", "300")
			}
		})
	}
	wg.Wait()
	for i, v := range versions {
		if errs[i] != nil {
			t.Fatalf("gorilla/sessions %s: %v", v.version, errs[i])
		}
		r := runs[i]
		t.Logf("gorilla/sessions %s (%s): findings:%s\nnotes:%s\nheap: %s", v.version, v.name, describeSites(r.Findings), bullets(r.DiagnosisNotes), growthLine(r.HeapGrowth))
		if r.Load == nil || r.Load.Completed == 0 || r.Load.Errors != 0 {
			t.Errorf("gorilla/sessions %s: load %+v, want requests and no errors", v.version, r.Load)
		}
	}

	buggy, fixed := runs[0], runs[1]
	// The catalogue of known bugs (its entry gorilla-sessions-context-
	// registry) names the way out on the leak itself: the release that
	// fixed it.
	const upgrade = "upgrade github.com/gorilla/sessions from v1.1.3 to v1.2.0"
	judge(t, "gorilla/sessions v1.1.3 (known leak), 20 s at 300/s", buggy.Findings, buggy.DiagnosisNotes,
		want{id: "leak.*", min: diagnose.Medium, says: upgrade})
	judge(t, "gorilla/sessions v1.2.0 (its fix), 20 s at 300/s", fixed.Findings, fixed.DiagnosisNotes)
	says := func(f result.Finding) bool {
		return strings.Contains(f.Fix, "upgrade github.com/gorilla/sessions") || strings.Contains(f.Title, "upgrade github.com/gorilla/sessions")
	}
	if slices.ContainsFunc(fixed.Findings, says) {
		t.Errorf("gorilla/sessions v1.2.0: a finding says to upgrade gorilla/sessions, whose fixed release it runs; findings:%s", describe(fixed.Findings))
	}
}

// TestProfile_PoolThatFillsOnceIsWarmUp profiles a real server before,
// during and after its load begins: a pool of gzip writers fills as the
// concurrent requests need them (each keeps its compressor's tables, about
// 800 KiB) and is then reused. The heap grows once, when the load begins,
// and holds: warm-up, said with its size, not a leak.
func TestProfile_PoolThatFillsOnceIsWarmUp(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "realmodule", "gzippool", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := buildModule(t.Context(), t.TempDir(), "example.com/gzipsvc", src, nil)
	if err != nil {
		t.Fatalf("build the service: %v", err)
	}
	url, err := startService(t, bin)
	if err != nil {
		t.Fatal(err)
	}
	// --warmup 0: the window opens on the idle service, so its first
	// snapshot is from before the load.
	r, err := profileURL(t, url, "--duration", "20s", "--warmup", "0", "--load", "GET /items", "--connections", "4")
	if err != nil {
		t.Fatal(err)
	}
	judge(t, "gzip writer pool filling once as the load begins, 20 s", r.Findings, r.DiagnosisNotes)
	if !slices.ContainsFunc(r.DiagnosisNotes, func(n string) bool { return strings.Contains(n, "as the load began") }) &&
		!slices.ContainsFunc(r.Findings, func(f result.Finding) bool { return f.ID == "growth.bounded" && f.Severity == "low" }) {
		t.Errorf("notes %v, findings %v: want the growth as the load began said, or bounded growth with its plateau", r.DiagnosisNotes, r.Findings)
	}
}

// lineOf returns the number of the first line of src that holds text.
func lineOf(t *testing.T, src []byte, text string) int64 {
	t.Helper()
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, text) {
			return int64(i + 1)
		}
	}
	t.Fatalf("no line holds %q", text)
	return 0
}

// buildModule writes a main package from src and a go.mod of the given
// module path requiring the given module versions into dir, resolves
// them through the module proxy as a user's build does, and builds it. It
// returns the executable's path.
func buildModule(ctx context.Context, dir, module string, src []byte, require []string) (string, error) {
	gomod := "module " + module + "\n\ngo 1.22\n"
	if len(require) > 0 {
		gomod += "\nrequire (\n\t" + strings.Join(require, "\n\t") + "\n)\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o666); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o666); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "svc")
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", bin, "."}} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		// A module of its own, outside any workspace of the caller's.
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s (GOPROXY=%q; the module proxy must be reachable): %w\n%s",
				strings.Join(args, " "), goEnv("GOPROXY"), err, out)
		}
	}
	return bin, nil
}

func goEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return os.Getenv(name)
	}
	return strings.TrimSpace(string(out))
}

// startService starts the executable with args as a user starts a service, reads
// where it listens from its first line of output ("listening on
// HOST:PORT") and returns its base URL. The service is killed when the
// test ends.
func startService(t *testing.T, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(t.Context(), bin, args...)
	first := &firstLine{line: make(chan string, 1)}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = first, &stderr
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	select {
	case line := <-first.line:
		addr, ok := strings.CutPrefix(line, "listening on ")
		if !ok {
			return "", fmt.Errorf("start %s: first line %q, want \"listening on HOST:PORT\"", bin, line)
		}
		return "http://" + strings.TrimSpace(addr), nil
	case err := <-exited:
		exited <- err
		return "", fmt.Errorf("start %s: exited (%v): %s", bin, err, stderr.String())
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("start %s: no address on stdout after 30s", bin)
	}
}

// firstLine is a process's standard output that hands on its first line
// and discards the rest.
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	done bool
	line chan string
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
		w.done = true
		w.line <- string(w.buf[:i])
		w.buf = nil
	}
	return len(p), nil
}

// profileURL runs heapscope profile against a service already running at
// url, with args, and returns the result. It may run on any goroutine: it
// reports failures as errors.
func profileURL(t *testing.T, url string, args ...string) (*result.Run, error) {
	return profileURLTo(t, url, t.TempDir(), args...)
}

// profileURLTo is profileURL writing its run directory under out.
func profileURLTo(t *testing.T, url, out string, args ...string) (*result.Run, error) {
	args = append([]string{"profile", url, "--out", out, "--format", "json"}, args...)
	got := heapscopeIn(t, "", args...)
	if got.code != exitOK {
		return nil, fmt.Errorf("profile %s: exit %d\nstderr: %s", url, got.code, got.stderr)
	}
	var res result.Run
	if err := json.Unmarshal([]byte(got.stdout), &res); err != nil {
		return nil, fmt.Errorf("profile %s: stdout is not result JSON: %w", url, err)
	}
	return &res, nil
}

// describeSites is describe with each finding's site and fix, for a log
// that shows where a verdict points and what it advises.
func describeSites(fs []result.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(describe([]result.Finding{f}))
		if f.Function != "" {
			fmt.Fprintf(&b, "\n    at %s (%s:%d)", f.Function, f.File, f.Line)
		}
		if f.Fix != "" {
			b.WriteString("\n    fix: " + f.Fix)
		}
	}
	return b.String()
}

func bullets(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("\n  - " + l)
	}
	return b.String()
}

// growthLine sums up the heap snapshots: the live heap after each forced
// GC, and the slopes fitted to it and to the sampled inuse_space.
func growthLine(g *result.HeapGrowth) string {
	if g == nil {
		return "none"
	}
	var live []string
	for _, s := range g.Snapshots {
		live = append(live, fmt.Sprintf("%.1f", float64(s.LiveBytes)/(1<<20)))
	}
	line := fmt.Sprintf("live MiB %s; inuse_space %+.1f MiB/min (R² %.2f)", strings.Join(live, " → "), g.SlopeBytesPerMinute/(1<<20), g.R2)
	if g.Live != nil {
		line += fmt.Sprintf("; live %+.1f MiB/min (R² %.2f)", g.Live.SlopeBytesPerMinute/(1<<20), g.Live.R2)
	}
	return line
}
