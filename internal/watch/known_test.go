package watch

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/storetest"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// TestBundle_leadsWithTheCauseItsHistoryFound: three scheduled runs of a
// target found a leak (a recorded run of the leaky example, committed as
// watch commits one); a trigger's bundle of the live target, whose
// few seconds cannot show the leak, leads with it all the same, with the
// fix its runs gave and since when it is known.
func TestBundle_leadsWithTheCauseItsHistoryFound(t *testing.T) {
	leaky := startExample(t, "leaky")
	cfg, err := config.ForURLs([]string{leaky.URL}, config.Settings{
		Every: time.Hour, Window: time.Second, Timeout: 10 * time.Second, Poll: 200 * time.Millisecond,
		Triggers: []config.Trigger{{Expr: "goroutines>=1", Pos: "test"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := cfg.Targets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	key := ts[0].Key
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	var leak string
	for _, ago := range []time.Duration{30, 20, 10} {
		e := storetest.Commit(t, st, store.KindRun, key, storetest.Leaky, store.Entry{Time: now.Add(-ago * time.Minute), Scheduled: true})
		res, err := rundir.Read(filepath.Join(st.Dir(), e.Path))
		if err != nil {
			t.Fatal(err)
		}
		leak = problem.CauseOf(res.Findings[0])
	}
	w, err := New(Options{Config: cfg, Store: st, Version: "test", BundleWindow: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	bundle := testserver.WaitFor(t, 60*time.Second, "a bundle", func() (store.Entry, bool) {
		h, _ := st.History(store.Query{})
		if len(h.Bundles) > 0 {
			return h.Bundles[0], true
		}
		return store.Entry{}, false
	})
	res, err := rundir.Read(filepath.Join(st.Dir(), bundle.Path))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) == 0 {
		t.Fatal("the bundle has no findings")
	}
	f := res.Findings[0]
	if f.Cause != leak || !strings.HasPrefix(f.Title, "known since ") || !strings.Contains(f.Title, "(3 captures)") || f.Fix == "" || strings.HasPrefix(f.Fix, "see the capture") {
		t.Errorf("the bundle's first finding %s %q (cause %q, fix %q): want the leak its runs found (%q), known from 3 captures, with their fix",
			f.ID, f.Title, f.Cause, f.Fix, leak)
	}
}
