package store

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

func TestStore_Check(t *testing.T) {
	tests := []struct {
		name string
		// damage breaks the store and returns the path of the problem.
		damage       func(t *testing.T, s *Embedded) string
		kind         ProblemKind
		repairable   bool
		afterRepair  func(t *testing.T, s *Embedded)
		entriesAfter int // indexed entries after repair (one is committed first)
	}{
		{
			name: "indexed, directory missing",
			damage: func(t *testing.T, s *Embedded) string {
				e := commit(t, s, KindRun, "b", fixturePartial, Entry{Time: at(1)})
				if err := os.RemoveAll(filepath.Join(s.Dir(), e.Path)); err != nil {
					t.Fatal(err)
				}
				return e.Path
			},
			kind: ProblemMissing, repairable: true, entriesAfter: 1,
		},
		{
			name: "indexed, result.json broken",
			damage: func(t *testing.T, s *Embedded) string {
				e := commit(t, s, KindRun, "b", fixturePartial, Entry{Time: at(1)})
				if err := os.WriteFile(filepath.Join(s.Dir(), e.Path, "result.json"), []byte(`{"schema_version": 1,`), 0o644); err != nil {
					t.Fatal(err)
				}
				return e.Path
			},
			kind: ProblemInvalid, repairable: false, entriesAfter: 2,
		},
		{
			name: "placed, not indexed: indexed again from entry.json",
			damage: func(t *testing.T, s *Embedded) string {
				return placeUnindexed(t, s, Entry{Kind: KindBundle, Target: "b", Time: at(2), Labels: map[string]string{"env": "prod"},
					Trigger: &Trigger{Expr: "rss>=1GiB", Value: 1.2e9, Threshold: 1 << 30, Unit: "bytes"}, CaptureSeconds: 3})
			},
			kind: ProblemUnindexed, repairable: true, entriesAfter: 2,
			afterRepair: func(t *testing.T, s *Embedded) {
				h, err := s.History(Query{Target: "b"})
				if err != nil {
					t.Fatal(err)
				}
				if len(h.Bundles) != 1 || h.Bundles[0].Trigger == nil || h.Bundles[0].Trigger.Expr != "rss>=1GiB" ||
					h.Bundles[0].CaptureSeconds != 3 || h.Bundles[0].Labels["env"] != "prod" || !h.Bundles[0].Time.Equal(at(2)) {
					t.Errorf("the bundle indexed again: %+v, want it as committed", h.Bundles)
				}
				if pts, err := s.Series("b", MetricHeapAfterGC, at(2), at(3)); err != nil || len(pts) != 1 {
					t.Errorf("its series: %v, %v", pts, err)
				}
			},
		},
		{
			name: "a run copied in by hand: indexed from its place and result.json",
			damage: func(t *testing.T, s *Embedded) string {
				rel := path.Join(RunsDir, TargetSlug("a"), "copied")
				writeFixture(t, fixturePartial, filepath.Join(s.Dir(), rel))
				return rel
			},
			kind: ProblemUnindexed, repairable: true, entriesAfter: 2,
			afterRepair: func(t *testing.T, s *Embedded) {
				h, err := s.History(Query{Target: "a"})
				if err != nil {
					t.Fatal(err)
				}
				res := readFixture(t, fixturePartial)
				if len(h.Runs) != 2 || !h.Runs[1].Time.Equal(res.Window.Start) && !h.Runs[0].Time.Equal(res.Window.Start) {
					t.Errorf("runs of a: %+v, want the copied one at its window's start", h.Runs)
				}
			},
		},
		{
			name: "not a run directory",
			damage: func(t *testing.T, s *Embedded) string {
				rel := path.Join(BundlesDir, TargetSlug("a"), "20260301T120000Z-half")
				if err := os.MkdirAll(filepath.Join(s.Dir(), rel, "profiles"), 0o755); err != nil {
					t.Fatal(err)
				}
				return rel
			},
			kind: ProblemStray, repairable: false, entriesAfter: 1,
		},
		{
			name: "a file among the targets",
			damage: func(t *testing.T, s *Embedded) string {
				if err := os.WriteFile(filepath.Join(s.Dir(), RunsDir, "notes.txt"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				return path.Join(RunsDir, "notes.txt")
			},
			kind: ProblemStray, repairable: false, entriesAfter: 1,
		},
		{
			name: "left under .tmp by a dead process",
			damage: func(t *testing.T, s *Embedded) string {
				if err := os.MkdirAll(filepath.Join(s.Dir(), TempDir, "run-dead", "profiles"), 0o755); err != nil {
					t.Fatal(err)
				}
				return path.Join(TempDir, "run-dead")
			},
			kind: ProblemTemporary, repairable: true, entriesAfter: 1,
			afterRepair: func(t *testing.T, s *Embedded) {
				if _, err := os.Stat(filepath.Join(s.Dir(), TempDir, "run-dead")); !os.IsNotExist(err) {
					t.Errorf("after repair: %v", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t)
			commit(t, s, KindRun, "a", fixtureLeaky, Entry{Time: at(0)})
			if r, err := s.Check(false); err != nil || !r.OK() || len(r.Found) != 0 || r.Entries != 1 || r.Directories != 1 {
				t.Fatalf("Check of a sound store: %v\n%s", err, r)
			}
			rel := tt.damage(t, s)
			r, err := s.Check(false)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() || len(r.Found) != 1 || r.Found[0].Kind != tt.kind || r.Found[0].Path != rel || r.Found[0].Repaired {
				t.Fatalf("Check: %s\nwant one %s problem at %s", r, tt.kind, rel)
			}
			if !strings.Contains(r.String(), rel) || len(r.Problems()) != 1 {
				t.Errorf("the report does not name %s:\n%s", rel, r)
			}
			r, err = s.Check(true)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() != tt.repairable || len(r.Found) != 1 || r.Found[0].Repaired != tt.repairable {
				t.Errorf("Check(true): %s\nwant the problem repaired: %v", r, tt.repairable)
			}
			r, err = s.Check(false)
			if err != nil {
				t.Fatal(err)
			}
			if tt.repairable && len(r.Found) != 0 {
				t.Errorf("Check after repair: %s", r)
			}
			if r.Entries != tt.entriesAfter {
				t.Errorf("%d entries indexed after repair, want %d", r.Entries, tt.entriesAfter)
			}
			if tt.afterRepair != nil {
				tt.afterRepair(t, s)
			}
		})
	}
}

// placeUnindexed puts a run directory in place as Commit does, and stops
// before indexing it: what a crash between the two leaves.
func placeUnindexed(t *testing.T, s *Embedded, e Entry) string {
	t.Helper()
	src := fixtureDir(t, fixturePartial)
	if err := writeRecord(src, e); err != nil {
		t.Fatal(err)
	}
	rel, err := place(s.Dir(), src, entryDir(e.Kind, e.Target, e.Time, e.Trigger))
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

func TestStore_CheckBesideAnotherProcess(t *testing.T) {
	s := openStore(t)
	placed := placeUnindexed(t, s, Entry{Kind: KindRun, Target: "a", Time: at(0)})
	leftover := filepath.Join(s.Dir(), TempDir, "run-elsewhere")
	if err := os.Mkdir(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	// A second Store holds its own lock, as another process would.
	other, err := Open(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := os.Stat(leftover); err != nil {
		t.Fatalf("Open beside another open store removed .tmp's content: %v", err)
	}
	r, err := s.Check(true)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Found) != 0 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "in use") {
		t.Errorf("Check beside another open store: %s\nwant nothing found and a note that .tmp and %s were not looked at", r, placed)
	}
	if _, err := os.Stat(leftover); err != nil {
		t.Errorf("Check beside another open store removed .tmp's content: %v", err)
	}
	// The same with a capture in progress in this process.
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := s.Begin(KindRun, "a")
	if err != nil {
		t.Fatal(err)
	}
	r, err = s.Check(true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Dir()); err != nil || len(r.Notes) != 1 {
		t.Errorf("Check during a capture: %s (%v)", r, err)
	}
	if err := p.Abandon(); err != nil {
		t.Fatal(err)
	}
	// Alone at last, it repairs.
	r, err = s.Check(true)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || len(r.Found) != 2 || len(r.Notes) != 0 {
		t.Errorf("Check alone: %s\nwant %s indexed and the leftover removed", r, placed)
	}
}

func TestOpen_RemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Begin(KindBundle, "a")
	if err != nil {
		t.Fatal(err)
	}
	writeFixture(t, fixturePartial, p.Dir())
	// The process dies without a word: its lock goes with it.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if des, err := os.ReadDir(filepath.Join(dir, TempDir)); err != nil || len(des) != 0 {
		t.Errorf(".tmp after Open: %d entries (%v), want none", len(des), err)
	}
}
