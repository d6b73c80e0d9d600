package storetest

import (
	"bytes"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/store"
)

func testCommit(t *testing.T, open Opener) {
	const target = "http://127.0.0.1:6060"
	leaky := Fixture(t, Leaky)
	slug := store.TargetSlug(target)
	tests := []struct {
		name    string
		kind    store.Kind
		fixture string
		sub     string // the run is written in this subdirectory of Dir()
		entry   store.Entry
		// wantPath is the entry's path; wantTime its time; wantLate
		// how late after its slot it began.
		wantPath string
		wantTime time.Time
		wantLate float64
	}{
		{
			name: "scheduled run at its window's start", kind: store.KindRun, fixture: Leaky,
			entry:    store.Entry{Scheduled: true, Labels: map[string]string{"env": "prod"}},
			wantPath: "runs/" + slug + "/" + leaky.Window.Start.UTC().Format(store.TimeLayout),
			wantTime: leaky.Window.Start.UTC(),
		},
		{
			// A run that began late is dated at its window's start,
			// its slot kept beside it.
			name: "late scheduled run with its slot", kind: store.KindRun, fixture: Leaky, sub: "late",
			entry:    store.Entry{Scheduled: true, Slot: leaky.Window.Start.Add(-61500 * time.Millisecond)},
			wantPath: "runs/" + slug + "/" + leaky.Window.Start.UTC().Format(store.TimeLayout) + "-2",
			wantTime: leaky.Window.Start.UTC(),
			wantLate: 61.5,
		},
		{
			name: "bundle named after its trigger", kind: store.KindBundle, fixture: Leaky,
			entry: store.Entry{Time: At(0), CaptureSeconds: 2.5,
				Trigger: &store.Trigger{Expr: "memory>=80%", Value: 0.83, Threshold: 0.8, Unit: "fraction"}},
			wantPath: "bundles/" + slug + "/20260301T120000Z-memory-ge-80pct",
			wantTime: At(0),
		},
		{
			name: "partial run, written in a subdirectory", kind: store.KindRun, fixture: Partial, sub: "127.0.0.1_6060-x",
			entry:    store.Entry{Time: At(1)},
			wantPath: "runs/" + slug + "/20260301T120100Z",
			wantTime: At(1),
		},
		{
			name: "second run of the same second", kind: store.KindRun, fixture: Partial,
			entry:    store.Entry{Time: At(1).Add(500 * time.Millisecond)},
			wantPath: "runs/" + slug + "/20260301T120100Z-2",
			wantTime: At(1).Add(500 * time.Millisecond),
		},
	}
	s := open(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.Begin(tt.kind, target)
			if err != nil {
				t.Fatal(err)
			}
			runDir := filepath.Join(p.Dir(), tt.sub)
			WriteFixture(t, tt.fixture, runDir)
			e, err := p.Commit(runDir, tt.entry)
			if err != nil {
				t.Fatal(err)
			}
			want := Fixture(t, tt.fixture)
			if e.ID == 0 || e.Kind != tt.kind || e.Target != target || e.Path != tt.wantPath ||
				!e.Time.Equal(tt.wantTime) || e.Status != string(want.Status) {
				t.Errorf("Commit: %+v, want kind %s, path %s, time %s, status %s", e, tt.kind, tt.wantPath, tt.wantTime, want.Status)
			}
			if !e.Slot.Equal(tt.entry.Slot) || e.LateSeconds != tt.wantLate {
				t.Errorf("Commit: slot %s, %gs late; want %s, %gs late", e.Slot, e.LateSeconds, tt.entry.Slot, tt.wantLate)
			}
			if _, err := os.Stat(p.Dir()); !os.IsNotExist(err) {
				t.Errorf("the capture's directory is still there: %v", err)
			}
			dir, err := s.RunDir(t.Context(), e)
			if err != nil {
				t.Fatal(err)
			}
			res, err := rundir.Read(dir)
			if err != nil {
				t.Fatalf("the committed run: %v", err)
			}
			if !res.Window.Start.Equal(want.Window.Start) {
				t.Errorf("the committed run's window starts at %s, want %s", res.Window.Start, want.Window.Start)
			}
			if size, err := TreeBytes(dir); err != nil || size != e.Bytes || e.Bytes <= 0 {
				t.Errorf("Bytes %d, the directory holds %d (%v)", e.Bytes, size, err)
			}
			// entry.json holds what the index holds beyond result.json.
			rec, err := store.ReadRecord(dir)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Target != target || !rec.Time.Equal(e.Time) || rec.Scheduled != tt.entry.Scheduled ||
				(rec.Trigger == nil) != (tt.entry.Trigger == nil) || rec.CaptureSeconds != tt.entry.CaptureSeconds ||
				len(rec.Labels) != len(tt.entry.Labels) || !rec.Slot.Equal(tt.entry.Slot) {
				t.Errorf("entry.json: %+v, want the entry %+v", rec, e)
			}
			// The index gives the same entry back, by History and by path.
			var found *store.Entry
			for _, x := range all(t, s, store.Query{Target: target}) {
				if x.ID == e.ID {
					found = &x
				}
			}
			if found == nil {
				t.Fatalf("History has no entry %d", e.ID)
			}
			gotJSON, _ := json.Marshal(found)
			wantJSON, _ := json.Marshal(e)
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("History gives\n%s\nCommit gave\n%s", gotJSON, wantJSON)
			}
			at, ok, err := s.EntryAt(e.Path)
			if err != nil || !ok || at.ID != e.ID || !at.End.After(at.Time) == (want.Window.DurationSeconds > 0) {
				t.Errorf("EntryAt(%s): %+v, %v, %v", e.Path, at, ok, err)
			}
		})
	}
	if _, ok, err := s.EntryAt("runs/nobody/20260301T120000Z"); ok || err != nil {
		t.Errorf("EntryAt of a path never stored: %v, %v", ok, err)
	}
}

func testCommitIndexesFindingsAndSeries(t *testing.T, open Opener) {
	s := open(t)
	e := Commit(t, s, store.KindRun, "svc", Leaky, store.Entry{Time: At(0)})
	res := Fixture(t, Leaky)
	h, err := s.History(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Findings) != len(res.Findings) {
		t.Fatalf("History has %d findings, result.json %d", len(h.Findings), len(res.Findings))
	}
	var leak *store.Finding
	for i, f := range h.Findings {
		if f.Path != e.Path || f.Source != store.SourceRun || !f.Time.Equal(e.Time) || f.Target != "svc" {
			t.Errorf("finding %+v, want it of entry %s", f, e.Path)
		}
		if f.Kind == "leak.inuse-growth" {
			leak = &h.Findings[i]
		}
	}
	if leak == nil || !strings.HasSuffix(leak.Where, "leakycache.go:38") || leak.Severity != "high" {
		t.Errorf("the leak finding: %+v, want it high at leakycache.go:38", leak)
	}
	points := 0
	for _, m := range store.Metrics() {
		pts, err := s.Series("svc", m, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		points += len(pts)
	}
	if want := len(store.SeriesOf(res)); points != want || points == 0 {
		t.Errorf("%d points indexed, the result gives %d", points, want)
	}
}

func testCommitRefuses(t *testing.T, open Opener) {
	failed := Fixture(t, Partial)
	failed.Status = result.StatusFailed
	failedJSON, err := json.Marshal(failed)
	if err != nil {
		t.Fatal(err)
	}
	dirOf := func(p store.Pending) string { return p.Dir() }
	tests := []struct {
		name    string
		write   func(t *testing.T, dir string)
		runDir  func(p store.Pending) string
		wantErr string
	}{
		{"no result.json", func(t *testing.T, dir string) {}, dirOf, "not a (finished) heapscope run"},
		{"a failed run", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, result.FileName), failedJSON, 0o644); err != nil {
				t.Fatal(err)
			}
		}, dirOf, `status is "failed"`},
		{"a directory elsewhere", func(t *testing.T, dir string) { WriteFixture(t, Partial, dir) },
			func(store.Pending) string { return fixtureDir(t, Partial) }, "not inside the capture's directory"},
	}
	s := open(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.Begin(store.KindRun, "svc")
			if err != nil {
				t.Fatal(err)
			}
			tt.write(t, p.Dir())
			_, err = p.Commit(tt.runDir(p), store.Entry{})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Commit: %v, want an error saying %q", err, tt.wantErr)
			}
			// Refused, the capture is still the caller's to abandon.
			if _, err := os.Stat(p.Dir()); err != nil {
				t.Fatalf("after a refused Commit: %v", err)
			}
			if err := p.Abandon(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(p.Dir()); !os.IsNotExist(err) {
				t.Errorf("after Abandon: %v", err)
			}
		})
	}
	if es := all(t, s, store.Query{}); len(es) != 0 {
		t.Errorf("%d entries indexed after refused commits", len(es))
	}
}

func testCommitTwice(t *testing.T, open Opener) {
	s := open(t)
	p, err := s.Begin(store.KindRun, "svc")
	if err != nil {
		t.Fatal(err)
	}
	WriteFixture(t, Partial, p.Dir())
	if _, err := p.Commit(p.Dir(), store.Entry{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Abandon(); err != nil {
		t.Errorf("Abandon after Commit: %v, want nothing done", err)
	}
	if _, err := p.Commit(p.Dir(), store.Entry{}); err == nil {
		t.Error("a second Commit: no error")
	}
	if es := all(t, s, store.Query{}); len(es) != 1 {
		t.Errorf("%d entries, want 1", len(es))
	}
}

func testBeginRefusesUnknownKind(t *testing.T, open Opener) {
	s := open(t)
	if _, err := s.Begin("snapshot", "svc"); err == nil {
		t.Error("Begin of kind snapshot: no error")
	}
}

func testIngest(t *testing.T, open Opener) {
	s := open(t)
	src := fixtureDir(t, Leaky)
	if err := os.MkdirAll(filepath.Join(src, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "profiles", "heap-000.pb.gz"), []byte("raw bytes, kept as fetched"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := s.Ingest(src, store.Entry{})
	if err != nil {
		t.Fatal(err)
	}
	res := Fixture(t, Leaky)
	if e.Kind != store.KindRun || e.Target != res.Target.URL || !e.Time.Equal(res.Window.Start) {
		t.Errorf("Ingest: %+v, want a run of %s at %s", e, res.Target.URL, res.Window.Start)
	}
	dir, err := s.RunDir(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "profiles", "heap-000.pb.gz")); err != nil || string(data) != "raw bytes, kept as fetched" {
		t.Errorf("the ingested copy's profile: %q, %v", data, err)
	}
	if _, err := rundir.Read(src); err != nil {
		t.Errorf("the source after Ingest: %v", err)
	}
	if _, err := os.Stat(filepath.Join(src, store.EntryFile)); !os.IsNotExist(err) {
		t.Errorf("Ingest wrote into its source: %v", err)
	}
	if path.Dir(path.Dir(e.Path)) != store.RunsDir {
		t.Errorf("ingested into %s, want under %s/", e.Path, store.RunsDir)
	}
	if _, err := s.Ingest(t.TempDir(), store.Entry{}); err == nil {
		t.Error("Ingest of an empty directory: no error")
	}
}

// testConcurrentCommits commits from several goroutines at once, all of
// one target and one second, while others read.
func testConcurrentCommits(t *testing.T, open Opener) {
	s := open(t)
	const writers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each+2)
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.History(store.Query{Target: "svc"}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Series("svc", store.MetricRSS, time.Time{}, time.Time{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var writersDone sync.WaitGroup
	for range writers {
		writersDone.Go(func() {
			for range each {
				p, err := s.Begin(store.KindRun, "svc")
				if err != nil {
					errs <- err
					return
				}
				WriteFixture(t, Partial, p.Dir())
				if _, err := p.Commit(p.Dir(), store.Entry{Time: At(0)}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	writersDone.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	h, err := s.History(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, e := range h.Runs {
		paths[e.Path] = true
		if dir, err := s.RunDir(t.Context(), e); err != nil {
			t.Error(err)
		} else if rec, err := store.ReadRecord(dir); err != nil || !rec.Time.Equal(At(0)) {
			t.Errorf("%s: entry.json %+v, %v", e.Path, rec, err)
		}
	}
	if len(h.Runs) != writers*each || len(paths) != writers*each {
		t.Errorf("%d runs in %d directories, want %d", len(h.Runs), len(paths), writers*each)
	}
}

// TreeBytes returns the bytes of the files under dir.
func TreeBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	return n, err
}

// testCommitVerifiesFiles commits a complete run with real profiles of
// this process, then the same with one of them cut short: the first is
// stored complete, the second partial, as history says too.
func testCommitVerifiesFiles(t *testing.T, open Opener) {
	s := open(t)
	commitWith := func(minute int, damage bool) store.Entry {
		p, err := s.Begin(store.KindRun, "a")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Abandon()
		WriteFixture(t, Leaky, p.Dir())
		profile := filepath.Join(p.Dir(), "profiles", "heap-000.pb.gz")
		if err := os.MkdirAll(filepath.Dir(profile), 0o755); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := pprof.Lookup("heap").WriteTo(&b, 0); err != nil {
			t.Fatal(err)
		}
		data := b.Bytes()
		if damage {
			data = data[:len(data)/2]
		}
		if err := os.WriteFile(profile, data, 0o644); err != nil {
			t.Fatal(err)
		}
		e, err := p.Commit(p.Dir(), store.Entry{Time: At(minute)})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	complete, partial := string(result.StatusComplete), string(result.StatusPartial)
	sound, broken := commitWith(0, false), commitWith(1, true)
	if sound.Status != complete || broken.Status != partial {
		t.Errorf("committed as %q and %q, want %q and, its profile cut short, %q", sound.Status, broken.Status, complete, partial)
	}
	for _, e := range all(t, s, store.Query{}) {
		if want := map[int64]string{sound.ID: complete, broken.ID: partial}[e.ID]; e.Status != want {
			t.Errorf("history: %s is %q, want %q", e.Path, e.Status, want)
		}
	}
}
