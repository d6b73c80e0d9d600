package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/target"
)

func TestCompareDirs(t *testing.T) {
	srv := serve(t, pprofMux(nil))
	out := t.TempDir()
	var dirs []string
	for range 3 {
		_, dir, err := Profile(t.Context(), Config{Target: target.Options{BaseURL: srv.URL}, Duration: 200 * time.Millisecond, OutDir: out, Name: "side"})
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	// The third run lost its allocation profile: compared without its
	// sites, and said so.
	lost := filepath.Join(dirs[2], "profiles", "allocs-delta.pb.gz")
	if err := os.Remove(lost); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(out, "missing")
	tests := []struct {
		name          string
		before, after []string
		flame         bool
		wantWarn      string
		wantErr       string
	}{
		{name: "text", before: dirs[:1], after: dirs[1:2]},
		{name: "with the flame graph", before: dirs[:1], after: dirs[1:2], flame: true},
		{name: "a run without its allocations", before: dirs[:1], after: dirs[2:], wantWarn: lost + ": listed in result.json but missing"},
		{name: "a missing run", before: dirs[:1], after: []string{missing}, wantErr: missing},
		{name: "bad options", before: dirs[:1], after: dirs[1:2], wantErr: "compare: Alpha 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := compare.Options{}
			if tt.name == "bad options" {
				o.Alpha = 2
			}
			var warned []string
			doc, err := CompareDirs(tt.before, tt.after, o, tt.flame, func(w string) { warned = append(warned, w) })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.Comparison == nil || doc.Comparison.Before.Label != tt.before[0] || doc.Comparison.After.Label != tt.after[0] {
				t.Fatalf("comparison %+v, want %s against %s", doc.Comparison, tt.before[0], tt.after[0])
			}
			if (doc.Flame != nil) != tt.flame {
				t.Errorf("flame graph %v, want one: %v", doc.Flame != nil, tt.flame)
			}
			if tt.wantWarn == "" && len(warned) > 0 || tt.wantWarn != "" && (len(warned) != 1 || !strings.HasPrefix(warned[0], tt.wantWarn)) {
				t.Errorf("warnings %q, want %q", warned, tt.wantWarn)
			}
		})
	}
}
