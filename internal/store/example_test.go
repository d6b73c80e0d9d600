package store_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/heapscope/heapscope/internal/store"
)

// A capture goes through Begin (a temporary directory the run writes
// into) and Commit (into place, then into the index); History and Series
// read it back without opening a profile.
func Example() {
	dir, err := os.MkdirTemp("", "heapscope-store")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	p, err := s.Begin(store.KindBundle, "http://127.0.0.1:6060")
	if err != nil {
		log.Fatal(err)
	}
	defer p.Abandon() // nothing, once committed
	// Here internal/run writes the run into p.Dir(); this example copies
	// a recorded one.
	if err := os.CopyFS(p.Dir(), os.DirFS(filepath.Join("storetest", "testdata", "runs", "leaky"))); err != nil {
		log.Fatal(err)
	}
	crossed := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e, err := p.Commit(p.Dir(), store.Entry{
		Time:           crossed,
		Trigger:        &store.Trigger{Expr: "memory>=80%", Value: 0.84, Threshold: 0.8, Unit: "fraction"},
		CaptureSeconds: 21.5,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Path, e.Status)

	h, err := s.History(store.Query{Target: "http://127.0.0.1:6060"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d runs, %d bundle fired by %s\n", len(h.Runs), len(h.Bundles), h.Bundles[0].Trigger.Expr)
	for _, f := range h.Findings {
		where := f.Where
		if where == "" {
			where = "(the whole process)"
		}
		fmt.Println(f.Severity, f.Kind, where)
	}
	pts, err := s.Series("http://127.0.0.1:6060", store.MetricGoroutines, time.Time{}, time.Time{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("goroutines at %s: %v\n", pts[0].Time.Format(time.TimeOnly), pts[0].Value)
	// Output:
	// bundles/127.0.0.1_6060-20ce8573aa35/20260301T120000Z-memory-ge-80pct complete
	// 0 runs, 1 bundle fired by memory>=80%
	// high leak.inuse-growth github.com/heapscope/heapscope/examples/leakycache/leakycache.go:38
	// info rss.breakdown (the whole process)
	// goroutines at 12:00:20: 11
}
