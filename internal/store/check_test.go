package store

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
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

// commitProfiled commits the leaky fixture with real profiles of this
// process beside its result.json, under the names a run gives them, and
// returns the entry.
func commitProfiled(t *testing.T, s *Embedded, target string, e Entry) Entry {
	t.Helper()
	p, err := s.Begin(KindRun, target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abandon()
	writeFixture(t, fixtureLeaky, p.Dir())
	writeProfiles(t, p.Dir())
	out, err := p.Commit(p.Dir(), e)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeProfiles writes this process's heap and goroutine profiles (real
// gzipped protobuf from the Go runtime) and a gzipped JSON file into a
// run directory.
func writeProfiles(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{"heap": "heap-000.pb.gz", "goroutine": "goroutine.pb.gz"} {
		var b bytes.Buffer
		if err := pprof.Lookup(name).WriteTo(&b, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "profiles", file), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(`{"memstats": []}`))
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "memstats.json.gz"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// truncate cuts a file to half its size.
func truncate(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

// snapshot returns every file under the data directory but the index's
// own (which a read may touch) with its size and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, IndexFile) {
			return nil
		}
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		data, err := os.ReadFile(p)
		out[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestVerifyRun(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   []string // broken files
	}{
		{"sound", func(*testing.T, string) {}, nil},
		{"a truncated profile", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "profiles", "heap-000.pb.gz")) },
			[]string{"profiles/heap-000.pb.gz"}},
		{"a profile of garbage in gzip", func(t *testing.T, dir string) {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write([]byte("not a profile at all, but compressed all the same"))
			zw.Close()
			if err := os.WriteFile(filepath.Join(dir, "profiles", "goroutine.pb.gz"), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"profiles/goroutine.pb.gz"}},
		{"a truncated .gz", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "memstats.json.gz")) },
			[]string{"memstats.json.gz"}},
		{"a truncated .json", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "result.json")) },
			[]string{"result.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := fixtureDir(t, fixtureLeaky)
			writeProfiles(t, dir)
			tt.damage(t, dir)
			broken, err := VerifyRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range broken {
				got = append(got, b.Path)
				if b.Reason == "" {
					t.Errorf("%s: no reason given", b.Path)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("VerifyRun: %v, want %v", broken, tt.want)
			}
		})
	}
}

func TestCommit_StoresABrokenRunAsPartial(t *testing.T) {
	s := openStore(t)
	p, err := s.Begin(KindRun, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abandon()
	writeFixture(t, fixtureLeaky, p.Dir())
	writeProfiles(t, p.Dir())
	truncate(t, filepath.Join(p.Dir(), "profiles", "heap-000.pb.gz"))
	e, err := p.Commit(p.Dir(), Entry{Time: at(0)})
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != "partial" {
		t.Errorf("a complete run with a truncated profile committed as %q, want partial", e.Status)
	}
	h, err := s.History(Query{})
	if err != nil || len(h.Runs) != 1 || h.Runs[0].Status != "partial" {
		t.Errorf("history: %+v (%v), want the run partial", h.Runs, err)
	}
}

// TestStore_CheckReadsBackEveryFile truncates a real stored profile and
// leaves a leftover under .tmp: Check reports both and changes nothing;
// with repair it removes the leftover and marks the run partial, and
// leaves the profile as it is.
func TestStore_CheckReadsBackEveryFile(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sound := commitProfiled(t, s, "a", Entry{Time: at(0)})
	e := commitProfiled(t, s, "a", Entry{Time: at(1)})
	if sound.Status != "complete" || e.Status != "complete" {
		t.Fatalf("runs with real profiles committed as %q and %q, want complete", sound.Status, e.Status)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	profile := path.Join(e.Path, "profiles", "heap-000.pb.gz")
	truncate(t, filepath.Join(dir, filepath.FromSlash(profile)))
	leftover := path.Join(TempDir, "run-dead")
	if err := os.MkdirAll(filepath.Join(dir, leftover, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	// What store check does: open the store to check it, check.
	s, err = OpenToCheck(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Check(false)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]ProblemKind{}
	for _, p := range r.Found {
		found[p.Path] = p.Kind
	}
	if r.OK() || len(r.Found) != 2 || found[profile] != ProblemBroken || found[leftover] != ProblemTemporary {
		t.Fatalf("Check: %s\nwant %s broken and %s left over", r, profile, leftover)
	}
	if r.Files == 0 || !strings.Contains(r.String(), "2 problems found, 0 repaired") || !strings.Contains(r.String(), profile) {
		t.Errorf("the report does not count and name what it found:\n%s", r)
	}
	if after := snapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("Check without repair changed the store's files")
	}
	h, err := s.History(Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range h.Runs {
		if x.Status != "complete" {
			t.Errorf("Check without repair changed %s's status to %q", x.Path, x.Status)
		}
	}

	r, err = s.Check(true)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || r.Repaired() != 1 || !strings.Contains(r.String(), "now indexed as partial") {
		t.Errorf("Check(true): %s\nwant the leftover removed, the profile reported, its run marked partial", r)
	}
	if _, err := os.Stat(filepath.Join(dir, leftover)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the leftover after repair: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(profile))); err != nil || string(data) != before[filepath.FromSlash(profile)] {
		t.Errorf("repair changed the broken profile (%v): it is a person's to look at", err)
	}
	h, err = s.History(Query{})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, x := range h.Runs {
		status[x.Path] = x.Status
	}
	if status[e.Path] != "partial" || status[sound.Path] != "complete" {
		t.Errorf("statuses after repair: %v, want %s partial and %s complete", status, e.Path, sound.Path)
	}
	for _, cs := range Captures(h) {
		for _, c := range cs {
			if c.Path == e.Path && c.Complete {
				t.Errorf("the run with the broken profile is a complete capture to the problems")
			}
		}
	}
	r, err = s.Check(false)
	if err != nil || len(r.Found) != 1 || r.Found[0].Path != profile || strings.Contains(r.String(), "repair marks it") {
		t.Errorf("Check after repair: %s (%v), want the profile still reported, its run partial", r, err)
	}
}

func TestStore_Adopt(t *testing.T) {
	s := openStore(t)
	commit(t, s, KindRun, "a", fixtureLeaky, Entry{Time: at(0)})
	placed := placeUnindexed(t, s, Entry{Kind: KindRun, Target: "a", Time: at(1)})

	// Beside another process, nothing is looked for.
	other, err := Open(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Adopt()
	if err != nil || !a.InUse || len(a.Entries) != 0 {
		t.Errorf("Adopt beside another open store: %+v (%v), want it in use and nothing adopted", a, err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}

	a, err = s.Adopt()
	if err != nil {
		t.Fatal(err)
	}
	if a.InUse || len(a.Failed) != 0 || len(a.Entries) != 1 || a.Entries[0].Path != placed || a.Entries[0].ID == 0 {
		t.Fatalf("Adopt: %+v, want %s indexed", a, placed)
	}
	if e, ok, err := s.EntryAt(placed); err != nil || !ok || !e.Time.Equal(at(1)) {
		t.Errorf("EntryAt(%s) after Adopt: %+v %v %v", placed, e, ok, err)
	}
	if r, err := s.Check(false); err != nil || !r.OK() || r.Entries != 2 {
		t.Errorf("Check after Adopt: %s (%v)", r, err)
	}
	if a, err := s.Adopt(); err != nil || len(a.Entries) != 0 {
		t.Errorf("Adopt again: %+v (%v), want nothing more", a, err)
	}
}

func TestStore_SizeIsTheFilesBytes(t *testing.T) {
	s := openStore(t)
	commitProfiled(t, s, "a", Entry{Time: at(0)})
	commit(t, s, KindBundle, "a", fixturePartial, Entry{Time: at(1), Trigger: &Trigger{Expr: "rss>=1GiB"}})
	placeUnindexed(t, s, Entry{Kind: KindRun, Target: "b", Time: at(2)})
	if _, err := s.Adopt(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.MarkBeforeOOM("a", at(5)); err != nil || !ok {
		t.Fatalf("MarkBeforeOOM: %v %v", ok, err)
	}
	var want int64
	for _, top := range []string{RunsDir, BundlesDir} {
		n, err := treeBytes(filepath.Join(s.Dir(), top))
		if err != nil {
			t.Fatal(err)
		}
		want += n
	}
	if got, err := s.Size(); err != nil || got != want {
		t.Errorf("Size: %d (%v), want the %d bytes of the files under %s and %s", got, err, want, RunsDir, BundlesDir)
	}
}

// TestStore_CheckWithoutRepairChangesNothing takes an index back a schema
// version and removes the bundles directory: Check without repair opens
// the store as it is, reports both and changes no file and no version;
// with repair, opening migrates and makes the directory.
func TestStore_CheckWithoutRepairChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	commitProfiled(t, s, "a", Entry{Time: at(0)})
	var latest int
	if err := s.writer.QueryRow("PRAGMA user_version").Scan(&latest); err != nil {
		t.Fatal(err)
	}
	if latest != 6 {
		t.Fatalf("the index is at version %d: take it back to %d here, as toVersion5 takes it back to 5", latest, latest-1)
	}
	toVersion5(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, BundlesDir)); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	s, err = OpenToCheck(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Check(false)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]ProblemKind{}
	for _, p := range r.Found {
		found[p.Path] = p.Kind
	}
	if r.OK() || len(r.Found) != 2 || found[BundlesDir] != ProblemMissing || found[IndexFile] != ProblemIndex ||
		!strings.Contains(r.String(), fmt.Sprintf("schema version %d, older than this heapscope's %d", latest-1, latest)) {
		t.Errorf("Check of an older index without bundles/: %s\nwant both reported", r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("Check without repair changed the store's files:\n%v\nwant\n%v", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
	}
	if v := schemaVersion(t, dir); v != latest-1 {
		t.Errorf("Check without repair left the index at version %d, want %d as it was", v, latest-1)
	}

	if s, err = OpenToCheck(dir, true); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err = s.Check(true); err != nil || !r.OK() || len(r.Found) != 0 {
		t.Errorf("Check with repair after opening to repair: %s (%v), want the store migrated and whole", r, err)
	}
	if v := schemaVersion(t, dir); v != latest {
		t.Errorf("opening to repair left the index at version %d, want %d", v, latest)
	}
}

// schemaVersion reads the index's schema version as a process of its own
// would: with a connection of its own.
func schemaVersion(t *testing.T, dir string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, IndexFile)+"?_query_only=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
