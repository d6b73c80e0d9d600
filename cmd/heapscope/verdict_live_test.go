//go:build accuracy

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/heapscope/heapscope/examples"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
)

// profileStarted starts a bundled example as a user starts a service (its
// own command line, no GODEBUG, the runtime's default heap sampling rate),
// runs heapscope profile against it with args, and returns the result and
// its run directory. It may run on any goroutine: it reports failures as
// errors.
func profileStarted(t *testing.T, example string, args ...string) (*result.Run, string, error) {
	svc, err := startExample(t.Context(), example)
	if err != nil {
		return nil, "", fmt.Errorf("start %s: %w", example, err)
	}
	defer svc.Stop()
	out := t.TempDir()
	if _, err := profileURLTo(t, svc.URL, out, args...); err != nil {
		return nil, "", err
	}
	dir, err := onlyRunDir(out)
	if err != nil {
		return nil, "", fmt.Errorf("profile %s: %w", example, err)
	}
	res, err := rundir.Read(dir)
	return res, dir, err
}

// TestProfile_VerdictsAtDefaultSettings is the README's profile command
// against the leaky cache started normally: the leak is named at the
// cache's append, medium or higher. The fixed twins, under their own
// load, are quiet: nothing medium or higher, five runs out of five. With
// HEAPSCOPE_RECORD=1 it records each run it judged right for
// TestDiagnose_RecordedVerdictRuns.
func TestProfile_VerdictsAtDefaultSettings(t *testing.T) {
	cacheAppend := leakyCacheAppend(t)
	record := func(dir, name string) {
		if os.Getenv(recordEnv) == "" || t.Failed() {
			return
		}
		to := filepath.Join("testdata", "recorded", verdictTest, name)
		if err := recordRun(dir, to, examplePaths(t)); err != nil {
			t.Error(err)
		}
	}

	// As README.md shows it.
	leaky, dir, err := profileStarted(t, "leaky", "--duration", "30s", "--load", "GET /process?id=user-{rand:100000}", "--rate", "500")
	if err != nil {
		t.Fatal(err)
	}
	judgeLeaky(t, leaky.Findings, leaky.DiagnosisNotes, cacheAppend)
	record(dir, "leaky")

	// The twins, side by side, five times: the verdict must hold every
	// time, not on average.
	for round := 1; round <= twinRounds; round++ {
		var wg sync.WaitGroup
		runs := make([]*result.Run, len(twins))
		dirs := make([]string, len(twins))
		errs := make([]error, len(twins))
		for i, name := range twins {
			method, path := examples.DefaultLoad(name)
			wg.Go(func() {
				runs[i], dirs[i], errs[i] = profileStarted(t, name, "--duration", "10s", "--load", method+" "+path, "--rate", "500")
			})
		}
		wg.Wait()
		for i, name := range twins {
			if errs[i] != nil {
				t.Fatalf("round %d: %v", round, errs[i])
			}
			judge(t, twinCaseName(name, round), runs[i].Findings, runs[i].DiagnosisNotes)
			record(dirs[i], twinRunName(name, round))
		}
	}
}

// examplePaths rewrites the paths of this machine that a run of a bundled
// example names to what -trimpath would have written: the toolchain's and
// the module cache's files by their import paths, this module's by its
// module path, heapscope's executable by its name.
func examplePaths(t *testing.T) *strings.Replacer {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := exampleExecutable()
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(
		filepath.Join(goEnv("GOROOT"), "src")+"/", "",
		goEnv("GOMODCACHE")+"/", "",
		bin, "heapscope",
		root+"/", "github.com/heapscope/heapscope/",
	)
}
