// Package storetest is the conformance suite of store.Store: every
// backend (the embedded SQLite and files, the shared PostgreSQL and object
// storage) runs Run against fresh stores of its own and must behave the
// same way through the interface. Its fixtures are real run directories
// recorded by testdata/gen.sh.
package storetest

import (
	"embed"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/store"
)

//go:embed testdata/runs
var fixtures embed.FS

// The fixtures.
const (
	// Leaky is a complete local run of the leaky cache under load, with
	// findings.
	Leaky = "leaky"
	// Partial is a partial run: the target died mid-window.
	Partial = "partial"
)

// Opener returns a fresh, empty store, closed when the test ends.
type Opener func(t *testing.T) store.Store

// Run runs the conformance suite against stores open returns.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"Commit", testCommit},
		{"CommitIndexesFindingsAndSeries", testCommitIndexesFindingsAndSeries},
		{"CommitRefuses", testCommitRefuses},
		{"CommitVerifiesFiles", testCommitVerifiesFiles},
		{"CommitTwice", testCommitTwice},
		{"BeginRefusesUnknownKind", testBeginRefusesUnknownKind},
		{"Ingest", testIngest},
		{"ConcurrentCommits", testConcurrentCommits},
		{"History", testHistory},
		{"HistoryJSON", testHistoryJSON},
		{"Targets", testTargets},
		{"LastHealthyRun", testLastHealthyRun},
		{"MarkBeforeOOM", testMarkBeforeOOM},
		{"AddFindings", testAddFindings},
		{"Size", testSize},
		{"Series", testSeries},
		{"Retain", testRetain},
		{"RunDir", testRunDir},
		{"Problems", testProblems},
		{"Events", testEvents},
		{"ProblemsOutliveRetention", testProblemsOutliveRetention},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open) })
	}
}

// WriteFixture writes a fixture's run directory into dir (created when
// missing).
func WriteFixture(t testing.TB, name, dir string) {
	t.Helper()
	sub, err := fs.Sub(fixtures, "testdata/runs/"+name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, sub); err != nil {
		t.Fatal(err)
	}
}

// Fixture returns a fixture's result.
func Fixture(t testing.TB, name string) *result.Run {
	t.Helper()
	data, err := fixtures.ReadFile("testdata/runs/" + name + "/" + result.FileName)
	if err != nil {
		t.Fatal(err)
	}
	var r result.Run
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// fixtureDir returns a fresh copy of a fixture's run directory.
func fixtureDir(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	WriteFixture(t, name, dir)
	return dir
}

// Commit captures a fixture as kind for target, through Begin and Commit.
func Commit(t testing.TB, s store.Store, kind store.Kind, target, fixture string, e store.Entry) store.Entry {
	t.Helper()
	return CommitEdited(t, s, kind, target, fixture, e, nil)
}

// At is a fixed time, minutes after a fixed origin.
func At(minutes int) time.Time {
	return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(minutes) * time.Minute)
}

// history fills a store with runs and bundles of two targets:
//
//	a: run 0 (complete, scheduled, env=prod), bundle 5, run 15 (partial,
//	   scheduled, env=prod), run 30 (complete, unscheduled, env=prod)
//	b: run 10 (complete, scheduled, env=dev), bundle 20
//
// historyFixtures names the fixture of each entry history commits.
var historyFixtures = map[string]string{"a0": Leaky, "a5": Leaky, "a15": Partial, "a30": Leaky, "b10": Leaky, "b20": Partial}

func history(t *testing.T, open Opener) (store.Store, map[string]store.Entry) {
	t.Helper()
	s := open(t)
	prod, dev := map[string]string{"env": "prod"}, map[string]string{"env": "dev"}
	trig := &store.Trigger{Expr: "goroutines>=10000", Value: 12000, Threshold: 10000}
	es := map[string]store.Entry{
		"a0":  Commit(t, s, store.KindRun, "a", Leaky, store.Entry{Time: At(0), Scheduled: true, Labels: prod}),
		"a5":  Commit(t, s, store.KindBundle, "a", Leaky, store.Entry{Time: At(5), Trigger: trig, CaptureSeconds: 1.5, Labels: prod}),
		"a15": Commit(t, s, store.KindRun, "a", Partial, store.Entry{Time: At(15), Scheduled: true, Labels: prod}),
		"a30": Commit(t, s, store.KindRun, "a", Leaky, store.Entry{Time: At(30), Labels: prod}),
		"b10": Commit(t, s, store.KindRun, "b", Leaky, store.Entry{Time: At(10), Scheduled: true, Labels: dev}),
		"b20": Commit(t, s, store.KindBundle, "b", Partial, store.Entry{Time: At(20), Trigger: trig, Labels: dev}),
	}
	return s, es
}

func ids(es []store.Entry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// all returns every entry History lists.
func all(t *testing.T, s store.Store, q store.Query) []store.Entry {
	t.Helper()
	h, err := s.History(q)
	if err != nil {
		t.Fatal(err)
	}
	return append(h.Runs, h.Bundles...)
}
