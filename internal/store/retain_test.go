package store

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestStore_Retain(t *testing.T) {
	tests := []struct {
		name   string
		maxAge time.Duration
		// bySize sets MaxBytes to the bytes of the entries wanted.
		bySize bool
		want   []string // the entries kept
	}{
		{"nothing to do", 0, false, []string{"a0", "a5", "b10", "a15", "b20", "a30"}},
		{"by age", 20 * time.Minute, false, []string{"b20", "a30"}},
		{"by size, oldest first", 0, true, []string{"b10", "a15", "b20", "a30"}},
		{"by age, then size", 25 * time.Minute, true, []string{"a30"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, es := history(t)
			s.now = func() time.Time { return at(40) }
			if err := s.AddFindings([]Finding{{Target: "a", Time: at(1), Kind: "old"}, {Target: "a", Time: at(39), Kind: "new"}}); err != nil {
				t.Fatal(err)
			}
			r := Retention{MaxAge: tt.maxAge}
			if tt.bySize {
				for _, name := range tt.want {
					r.MaxBytes += es[name].Bytes
				}
			}
			removed, err := s.Retain(r)
			if err != nil {
				t.Fatal(err)
			}
			if removed != len(es)-len(tt.want) {
				t.Errorf("Retain removed %d, want %d", removed, len(es)-len(tt.want))
			}
			h, err := s.History(Query{})
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for name, e := range es {
				indexed := slices.ContainsFunc(append(h.Runs, h.Bundles...), func(x Entry) bool { return x.ID == e.ID })
				_, statErr := os.Stat(filepath.Join(s.Dir(), filepath.FromSlash(e.Path)))
				if indexed != (statErr == nil) {
					t.Errorf("%s: indexed %v, directory: %v", name, indexed, statErr)
				}
				if indexed {
					kept = append(kept, name)
				}
			}
			slices.Sort(kept)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(kept, want) {
				t.Errorf("kept %v, want %v", kept, want)
			}
			size, err := s.Size()
			if err != nil {
				t.Fatal(err)
			}
			if r.MaxBytes > 0 && size > r.MaxBytes {
				t.Errorf("Size %d after retention to %d", size, r.MaxBytes)
			}
			if des, _ := os.ReadDir(filepath.Join(s.Dir(), TempDir)); len(des) != 0 {
				t.Errorf("%d entries left under .tmp", len(des))
			}
			// The points and findings of removed entries go with them,
			// series findings by age.
			oldKept := slices.ContainsFunc(h.Findings, func(f Finding) bool { return f.Kind == "old" })
			if oldKept == (tt.maxAge > 0) {
				t.Errorf("the old series finding kept: %v, with MaxAge %s", oldKept, tt.maxAge)
			}
			for _, name := range kept {
				var n int
				if err := s.reader.QueryRow("SELECT COUNT(*) FROM points WHERE entry_id = ?", es[name].ID).Scan(&n); err != nil || n == 0 {
					t.Errorf("%s: %d points (%v), want its series kept", name, n, err)
				}
			}
			var orphans int
			if err := s.reader.QueryRow(`SELECT COUNT(*) FROM points p WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.id = p.entry_id)`).Scan(&orphans); err != nil {
				t.Fatal(err)
			}
			if err := s.reader.QueryRow(`SELECT COUNT(*) + ? FROM findings f WHERE f.entry_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.id = f.entry_id)`, orphans).Scan(&orphans); err != nil {
				t.Fatal(err)
			}
			if orphans > 0 {
				t.Errorf("%d points or findings left of removed entries", orphans)
			}
		})
	}
}
