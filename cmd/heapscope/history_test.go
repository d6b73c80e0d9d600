package main

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/storetest"
)

// TestHistory_sameLeakIsOneProblem stores three captures of the leaky
// example (a recorded run, committed as watch commits one) that all find
// the leak: history lists it once, as one problem of three captures, in
// JSON and in one text line of the terminal's width, and the runs name it
// by its number instead of repeating its text.
func TestHistory_sameLeakIsOneProblem(t *testing.T) {
	data := t.TempDir()
	st, err := store.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	const target = "http://127.0.0.1:6060/debug/pprof/"
	for _, min := range []int{0, 10, 20} {
		storetest.Commit(t, st, store.KindRun, target, storetest.Leaky, store.Entry{Time: storetest.At(min), Scheduled: true})
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	got := heapscope(t, "history", "--data", data, "--format", "json")
	if got.code != exitOK {
		t.Fatalf("history --format json: exit %d: %s", got.code, got.stderr)
	}
	var h struct {
		Runs, Bundles, Findings []json.RawMessage
		Problems                []problem.Problem
	}
	if err := json.Unmarshal([]byte(got.stdout), &h); err != nil {
		t.Fatalf("history --format json: %v\n%s", err, got.stdout)
	}
	if len(h.Runs) != 3 || h.Bundles == nil || len(h.Findings) != 3 {
		t.Errorf("history: %d runs, bundles %v, %d findings; want the 3 runs and their 3 leak findings", len(h.Runs), h.Bundles, len(h.Findings))
	}
	if len(h.Problems) != 1 {
		t.Fatalf("history: %d problems %+v, want the leak once", len(h.Problems), h.Problems)
	}
	p := h.Problems[0]
	if p.State != problem.Open || p.Captures != 3 || p.Severity != "high" || !strings.HasSuffix(p.Where, "leakycache.go:38") ||
		!p.FirstSeen.Equal(storetest.At(0)) || !p.LastSeen.Equal(storetest.At(20)) || p.Trend == nil || len(p.Evidence) == 0 {
		t.Errorf("problem %+v: want the leak open at leakycache.go:38 in 3 captures from 12:00 to 12:20, with its trend and evidence", p)
	}

	const width = 120
	t.Setenv("COLUMNS", "120")
	text := heapscope(t, "history", "--data", data)
	if text.code != exitOK {
		t.Fatalf("history: exit %d: %s", text.code, text.stderr)
	}
	var leakLines, runsNamingIt int
	for _, line := range strings.Split(text.stdout, "\n") {
		if strings.Contains(line, "leak.inuse-growth") {
			leakLines++
			if n := utf8.RuneCountInString(line); n > width || !strings.Contains(line, "3 captures") || !strings.HasPrefix(strings.TrimSpace(line), "#1 ") {
				t.Errorf("the problem's line (%d characters, width %d): %q; want #1 and its 3 captures within the width", n, width, line)
			}
		}
		if strings.Contains(line, "the live heap grows") && !strings.Contains(line, "leak.inuse-growth") {
			t.Errorf("the leak's text again, beside its problem: %q", line)
		}
		if strings.Contains(line, " complete ") && strings.Contains(line, " #1 ") {
			runsNamingIt++
		}
	}
	if leakLines != 1 || runsNamingIt != 3 {
		t.Errorf("the leak in %d lines, named by %d runs; want one line and the 3 runs naming it #1:\n%s", leakLines, runsNamingIt, text.stdout)
	}
}
