package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/result"
)

// The end-to-end cases judge heapscope's verdicts the same way, and,
// when HEAPSCOPE_ACCURACY names a file, append each outcome to it as a
// JSON line: bench/accuracy.sh runs the cases and turns the lines into
// the accuracy table of docs/findings.md (true findings, missed, false
// alarms), so that a change that trades one for another shows.

// want is a finding a case must have: its id ("leak.*": any id with that
// prefix), where (the file's base name and line; 0 for any line), of
// severity min or above, and, when set, words its title or fix must hold.
type want struct {
	id   string
	file string
	line int64
	min  diagnose.Severity
	says string
}

func (w want) String() string {
	s := w.id
	if w.file != "" {
		s += " at " + w.file
		if w.line > 0 {
			s += fmt.Sprintf(":%d", w.line)
		}
	}
	s += " ≥ " + w.min.String()
	if w.says != "" {
		s += fmt.Sprintf(" saying %q", w.says)
	}
	return s
}

func (w want) matches(f result.Finding) bool {
	id := f.ID == w.id
	if prefix, ok := strings.CutSuffix(w.id, "*"); ok {
		id = strings.HasPrefix(f.ID, prefix)
	}
	return id && diagnose.SeverityOf(f) >= w.min &&
		(w.file == "" || strings.HasSuffix(f.File, "/"+w.file) || f.File == w.file) &&
		(w.line == 0 || f.Line == w.line) &&
		(w.says == "" || strings.Contains(f.Title, w.says) || strings.Contains(f.Fix, w.says))
}

// accuracyRecord is one case's outcome, as bench/accuracy.sh reads it.
type accuracyRecord struct {
	Case string `json:"case"`
	// Expected are the findings the case must have; Found those it has,
	// Missed the others.
	Expected []string `json:"expected"`
	Found    []string `json:"found"`
	Missed   []string `json:"missed"`
	// FalseAlarms are findings of medium or above that no expectation
	// accounts for (GC pauses aside: a short window's pauses are the
	// machine's).
	FalseAlarms []string `json:"false_alarms"`
}

var accuracyMu sync.Mutex

// judge checks a case's findings: each want must be there, and nothing
// else of medium or above (GC pauses aside). It reports what fails with
// t.Errorf and records the outcome.
func judge(t *testing.T, name string, fs []result.Finding, notes []string, wants ...want) {
	t.Helper()
	rec := accuracyRecord{Case: name, Expected: []string{}, Found: []string{}, Missed: []string{}, FalseAlarms: []string{}}
	accounted := make([]bool, len(fs))
	for _, w := range wants {
		rec.Expected = append(rec.Expected, w.String())
		hit := false
		for i, f := range fs {
			if w.matches(f) {
				hit, accounted[i] = true, true
			}
		}
		if hit {
			rec.Found = append(rec.Found, w.String())
		} else {
			rec.Missed = append(rec.Missed, w.String())
			t.Errorf("%s: missed %s; findings:%s\nnotes: %v", name, w, describe(fs), notes)
		}
	}
	for i, f := range fs {
		if accounted[i] || diagnose.SeverityOf(f) < diagnose.Medium || f.ID == "gc.pause" {
			continue
		}
		alarm := fmt.Sprintf("%s %s at %s:%d", f.Severity, f.ID, shortFile(f.File), f.Line)
		rec.FalseAlarms = append(rec.FalseAlarms, alarm)
		t.Errorf("%s: false alarm %s: %s", name, alarm, f.Title)
	}
	recordAccuracy(t, rec)
}

func shortFile(file string) string {
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		return file[i+1:]
	}
	return file
}

// recordAccuracy appends rec to the file HEAPSCOPE_ACCURACY names.
func recordAccuracy(t *testing.T, rec accuracyRecord) {
	t.Helper()
	path := os.Getenv("HEAPSCOPE_ACCURACY")
	if path == "" {
		return
	}
	line, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	accuracyMu.Lock()
	defer accuracyMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("record accuracy: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatalf("record accuracy: %v", err)
	}
}
