package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/heapscope/heapscope/examples"
	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/result"
)

// profileStarted starts a bundled example as a user starts a service (its
// own command line, no GODEBUG, the runtime's default heap sampling rate),
// runs heapscope profile against it with args, and returns the result. It
// may run on any goroutine: it reports failures as errors.
func profileStarted(t *testing.T, example string, args ...string) (*result.Run, error) {
	svc, err := startExample(t.Context(), example)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", example, err)
	}
	defer svc.Stop()
	return profileURL(t, svc.URL, args...)
}

// TestProfile_VerdictsAtDefaultSettings is the README's profile command
// against the leaky cache started normally: the leak is named at the
// cache's append, medium or higher. The fixed twins, under their own
// load, are quiet: nothing medium or higher, five runs out of five.
func TestProfile_VerdictsAtDefaultSettings(t *testing.T) {
	src := filepath.Join("..", "..", "examples", "leakycache", "leakycache.go")
	cacheAppend := sourceLine(t, src, "w.cache[id] = append(w.cache[id], b...)")

	// As README.md shows it.
	leaky, err := profileStarted(t, "leaky", "--duration", "30s", "--load", "GET /process?id=user-{rand:100000}", "--rate", "500")
	if err != nil {
		t.Fatal(err)
	}
	judge(t, "leaky cache, README's profile command (30 s, 500/s)", leaky.Findings, leaky.DiagnosisNotes,
		want{id: "leak.inuse-growth", file: "leakycache.go", line: cacheAppend, min: diagnose.Medium})
	if f := findingAt(leaky.Findings, "leak.inuse-growth", "leakycache.go", cacheAppend); f != nil && (!strings.Contains(f.Title, "exact") || f.Evidence["site_samples"] <= 0) {
		t.Errorf("leaky: finding %q (evidence %v) does not give the exact growth and the samples behind its site", f.Title, f.Evidence)
	}

	// The twins, side by side, five times: the verdict must hold every
	// time, not on average.
	for round := range 5 {
		var wg sync.WaitGroup
		names := []string{"optimized", "kv-tuned"}
		runs := make([]*result.Run, len(names))
		errs := make([]error, len(names))
		for i, name := range names {
			method, path := examples.DefaultLoad(name)
			wg.Go(func() {
				runs[i], errs[i] = profileStarted(t, name, "--duration", "10s", "--load", method+" "+path, "--rate", "500")
			})
		}
		wg.Wait()
		for i, name := range names {
			r := runs[i]
			if errs[i] != nil {
				t.Fatalf("round %d: %v", round+1, errs[i])
			}
			judge(t, fmt.Sprintf("%s, 10 s at 500/s, run %d of 5", name, round+1), r.Findings, r.DiagnosisNotes)
		}
	}
}
