package store

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
)

func TestPending_Commit(t *testing.T) {
	const target = "http://127.0.0.1:6060"
	slug := targetSlug(target)
	leaky := readFixture(t, fixtureLeaky)
	tests := []struct {
		name    string
		kind    Kind
		fixture string
		sub     string // the run is written in this subdirectory of Dir()
		entry   Entry
		// wantPath is the entry's path; wantTime its time.
		wantPath string
		wantTime time.Time
	}{
		{
			name: "scheduled run at its window's start", kind: KindRun, fixture: fixtureLeaky,
			entry:    Entry{Scheduled: true, Labels: map[string]string{"env": "prod"}},
			wantPath: "runs/" + slug + "/" + leaky.Window.Start.UTC().Format(timeLayout),
			wantTime: leaky.Window.Start.UTC(),
		},
		{
			name: "bundle named after its trigger", kind: KindBundle, fixture: fixtureLeaky,
			entry: Entry{Time: at(0), CaptureSeconds: 2.5,
				Trigger: &Trigger{Expr: "memory>=80%", Value: 0.83, Threshold: 0.8, Unit: "fraction"}},
			wantPath: "bundles/" + slug + "/20260301T120000Z-memory-ge-80pct",
			wantTime: at(0),
		},
		{
			name: "partial run, written in a subdirectory", kind: KindRun, fixture: fixturePartial, sub: "127.0.0.1_6060-x",
			entry:    Entry{Time: at(1)},
			wantPath: "runs/" + slug + "/20260301T120100Z",
			wantTime: at(1),
		},
		{
			name: "second run of the same second", kind: KindRun, fixture: fixturePartial,
			entry:    Entry{Time: at(1).Add(500 * time.Millisecond)},
			wantPath: "runs/" + slug + "/20260301T120100Z-2",
			wantTime: at(1).Add(500 * time.Millisecond),
		},
	}
	s := openStore(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.Begin(tt.kind, target)
			if err != nil {
				t.Fatal(err)
			}
			runDir := filepath.Join(p.Dir(), tt.sub)
			writeFixture(t, tt.fixture, runDir)
			e, err := p.Commit(runDir, tt.entry)
			if err != nil {
				t.Fatal(err)
			}
			want := readFixture(t, tt.fixture)
			if e.ID == 0 || e.Kind != tt.kind || e.Target != target || e.Path != tt.wantPath ||
				!e.Time.Equal(tt.wantTime) || e.Status != string(want.Status) {
				t.Errorf("Commit: %+v, want kind %s, path %s, time %s, status %s", e, tt.kind, tt.wantPath, tt.wantTime, want.Status)
			}
			dir := filepath.Join(s.Dir(), filepath.FromSlash(e.Path))
			res, err := rundir.Read(dir)
			if err != nil {
				t.Fatalf("the committed run: %v", err)
			}
			if !res.Window.Start.Equal(want.Window.Start) {
				t.Errorf("the committed run's window starts at %s, want %s", res.Window.Start, want.Window.Start)
			}
			if size, err := treeBytes(dir); err != nil || size != e.Bytes || e.Bytes <= 0 {
				t.Errorf("Bytes %d, the directory holds %d (%v)", e.Bytes, size, err)
			}
			if _, err := os.Stat(p.Dir()); !os.IsNotExist(err) {
				t.Errorf("the capture's temporary directory is still there: %v", err)
			}
			// entry.json holds what the index holds beyond result.json.
			rec, err := readRecord(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := rec.entry()
			if got.Target != target || !got.Time.Equal(e.Time) || got.Scheduled != tt.entry.Scheduled ||
				(got.Trigger == nil) != (tt.entry.Trigger == nil) || got.CaptureSeconds != tt.entry.CaptureSeconds ||
				len(got.Labels) != len(tt.entry.Labels) {
				t.Errorf("entry.json: %+v, want the entry %+v", got, e)
			}
			// The index gives the same entry back.
			h, err := s.History(Query{Target: target})
			if err != nil {
				t.Fatal(err)
			}
			var found *Entry
			for _, x := range append(h.Runs, h.Bundles...) {
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
		})
	}
}

func TestPending_CommitIndexesFindingsAndSeries(t *testing.T) {
	s := openStore(t)
	e := commit(t, s, KindRun, "svc", fixtureLeaky, Entry{Time: at(0)})
	res := readFixture(t, fixtureLeaky)
	h, err := s.History(Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Findings) != len(res.Findings) {
		t.Fatalf("History has %d findings, result.json %d", len(h.Findings), len(res.Findings))
	}
	var leak *Finding
	for i, f := range h.Findings {
		if f.Path != e.Path || f.Source != SourceRun || !f.Time.Equal(e.Time) || f.Target != "svc" {
			t.Errorf("finding %+v, want it of entry %s", f, e.Path)
		}
		if f.Kind == "leak.inuse-growth" {
			leak = &h.Findings[i]
		}
	}
	if leak == nil || !strings.HasSuffix(leak.Where, "leakycache.go:38") || leak.Severity != "high" {
		t.Errorf("the leak finding: %+v, want it high at leakycache.go:38", leak)
	}
	if n := count(t, s.reader, "points"); n != len(seriesOf(res)) {
		t.Errorf("%d points indexed, the result gives %d", n, len(seriesOf(res)))
	}
}

func TestPending_CommitRefuses(t *testing.T) {
	failed := readFixture(t, fixturePartial)
	failed.Status = result.StatusFailed
	failedJSON, err := json.Marshal(failed)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		write   func(t *testing.T, dir string)
		runDir  func(p *Pending) string
		wantErr string
	}{
		{"no result.json", func(t *testing.T, dir string) {}, (*Pending).Dir, "not a (finished) heapscope run"},
		{"a failed run", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, result.FileName), failedJSON, 0o644); err != nil {
				t.Fatal(err)
			}
		}, (*Pending).Dir, `status is "failed"`},
		{"a directory elsewhere", func(t *testing.T, dir string) { writeFixture(t, fixturePartial, dir) },
			func(*Pending) string { return fixtureDir(t, fixturePartial) }, "not inside the capture's directory"},
	}
	s := openStore(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.Begin(KindRun, "svc")
			if err != nil {
				t.Fatal(err)
			}
			tt.write(t, p.Dir())
			_, err = p.Commit(tt.runDir(p), Entry{})
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
	if n := count(t, s.reader, "entries"); n != 0 {
		t.Errorf("%d entries indexed after refused commits", n)
	}
}

func TestPending_CommitTwice(t *testing.T) {
	s := openStore(t)
	p, err := s.Begin(KindRun, "svc")
	if err != nil {
		t.Fatal(err)
	}
	writeFixture(t, fixturePartial, p.Dir())
	if _, err := p.Commit(p.Dir(), Entry{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Abandon(); err != nil {
		t.Errorf("Abandon after Commit: %v, want nothing done", err)
	}
	if _, err := p.Commit(p.Dir(), Entry{}); err == nil {
		t.Error("a second Commit: no error")
	}
	if n := count(t, s.reader, "entries"); n != 1 {
		t.Errorf("%d entries, want 1", n)
	}
}

func TestStore_BeginRefusesUnknownKind(t *testing.T) {
	s := openStore(t)
	if _, err := s.Begin("snapshot", "svc"); err == nil {
		t.Error("Begin of kind snapshot: no error")
	}
}

func TestStore_Ingest(t *testing.T) {
	s := openStore(t)
	src := fixtureDir(t, fixtureLeaky)
	if err := os.MkdirAll(filepath.Join(src, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "profiles", "heap-000.pb.gz"), []byte("raw bytes, kept as fetched"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := s.Ingest(src, Entry{})
	if err != nil {
		t.Fatal(err)
	}
	res := readFixture(t, fixtureLeaky)
	if e.Kind != KindRun || e.Target != res.Target.URL || !e.Time.Equal(res.Window.Start) {
		t.Errorf("Ingest: %+v, want a run of %s at %s", e, res.Target.URL, res.Window.Start)
	}
	copied := filepath.Join(s.Dir(), filepath.FromSlash(e.Path), "profiles", "heap-000.pb.gz")
	if data, err := os.ReadFile(copied); err != nil || string(data) != "raw bytes, kept as fetched" {
		t.Errorf("the ingested copy's profile: %q, %v", data, err)
	}
	if _, err := rundir.Read(src); err != nil {
		t.Errorf("the source after Ingest: %v", err)
	}
	if _, err := os.Stat(filepath.Join(src, entryFile)); !os.IsNotExist(err) {
		t.Errorf("Ingest wrote into its source: %v", err)
	}
	if path.Dir(path.Dir(e.Path)) != RunsDir {
		t.Errorf("ingested into %s, want under %s/", e.Path, RunsDir)
	}
	if _, err := s.Ingest(t.TempDir(), Entry{}); err == nil {
		t.Error("Ingest of an empty directory: no error")
	}
}

// TestStore_ConcurrentCommits commits from several goroutines at once,
// all of one target and one second, while others read.
func TestStore_ConcurrentCommits(t *testing.T) {
	s := openStore(t)
	const writers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each+2)
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.History(Query{Target: "svc"}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Series("svc", MetricRSS, time.Time{}, time.Time{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var writersDone sync.WaitGroup
	for range writers {
		writersDone.Add(1)
		go func() {
			defer writersDone.Done()
			for range each {
				p, err := s.Begin(KindRun, "svc")
				if err != nil {
					errs <- err
					return
				}
				writeFixture(t, fixturePartial, p.Dir())
				if _, err := p.Commit(p.Dir(), Entry{Time: at(0)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	writersDone.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	h, err := s.History(Query{})
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, e := range h.Runs {
		paths[e.Path] = true
	}
	if len(h.Runs) != writers*each || len(paths) != writers*each {
		t.Errorf("%d runs in %d directories, want %d", len(h.Runs), len(paths), writers*each)
	}
	if r, err := s.Check(false); err != nil || len(r.Found) != 0 {
		t.Errorf("Check: %v\n%s", err, r)
	}
}
