package run

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/target"
)

// TestDiagnoseStored stores four lean runs of a service that keeps 4 MiB
// more between each, as watch would, and diagnoses them as one series: the
// growth is found at the line that keeps the buffers. The buffers are
// larger than the sampling interval (512 KiB), so every one is sampled and
// the growth is steady in the profiles as it is in the heap.
func TestDiagnoseStored(t *testing.T) {
	h := &hoard{}
	srv := serve(t, pprofMux(map[string]http.HandlerFunc{"/work": h.ServeHTTP}))
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	for i := range 4 {
		for range 4 {
			h.keep(1 << 20)
		}
		p, err := st.Begin(store.KindRun, "")
		if err != nil {
			t.Fatal(err)
		}
		_, dir, err := Profile(t.Context(), Config{Target: target.Options{BaseURL: srv.URL}, Duration: 200 * time.Millisecond,
			Snapshots: 2, OutDir: p.Dir(), Lean: true})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if _, err := p.Commit(dir, store.Entry{Scheduled: true}); err != nil {
			t.Fatalf("commit run %d: %v", i, err)
		}
	}
	rep, _, err := DiagnoseStored(t.Context(), st, srv.URL, start.Add(-time.Minute), Diagnosis{})
	if err != nil {
		t.Fatalf("DiagnoseStored: %v", err)
	}
	var found bool
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.ID, "leak.") && strings.Contains(f.Function, "hoard") {
			found = true
		}
	}
	if !found {
		t.Errorf("no leak at the hoard over four stored runs; findings %+v, notes %v", rep.Findings, rep.Notes)
	}

	if _, _, err := DiagnoseStored(t.Context(), st, "http://127.0.0.1:1", start, Diagnosis{}); err == nil || !strings.Contains(err.Error(), "the store has no target http://127.0.0.1:1") {
		t.Errorf("an unknown target: %v", err)
	}
}

func TestEvenly(t *testing.T) {
	tests := []struct {
		n, max int
		want   []int
	}{
		{n: 3, max: 48, want: []int{0, 1, 2}},
		{n: 10, max: 4, want: []int{0, 3, 6, 9}},
		{n: 672, max: 3, want: []int{0, 335, 671}},
		{n: 5, max: 5, want: []int{0, 1, 2, 3, 4}},
	}
	for _, tt := range tests {
		xs := make([]int, tt.n)
		for i := range xs {
			xs[i] = i
		}
		if got := evenly(xs, tt.max); !slices.Equal(got, tt.want) {
			t.Errorf("evenly(%d items, %d) = %v, want %v", tt.n, tt.max, got, tt.want)
		}
	}
}
