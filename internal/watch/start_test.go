package watch

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// TestRun_saysWhatItWatchesAndWhatCannotFire starts watch on a local
// service with no memory limit and a memory>=80% trigger: it must say at
// start what it watches and when it first captures it, and that the
// trigger can never fire there, in its log and in the target's health.
func TestRun_saysWhatItWatchesAndWhatCannotFire(t *testing.T) {
	leaky := startExample(t, "leaky")
	cfg, err := config.ForURLs([]string{leaky.URL}, config.Settings{
		Every: time.Hour, Window: time.Second, Timeout: 5 * time.Second, Poll: 200 * time.Millisecond,
		Triggers: []config.Trigger{{Expr: "memory>=80%", Pos: "test"}, {Expr: "goroutines>=100000", Pos: "test"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var log testserver.Buffer
	w, err := New(Options{Config: cfg, Store: st, Version: "test", Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	hs := testserver.WaitFor(t, 30*time.Second, "the targets' health", func() ([]Health, bool) {
		hs := w.Health()
		return hs, len(hs) == 1 && len(hs[0].Unarmed) > 0
	})
	if got := hs[0].Unarmed; len(got) != 1 || !strings.HasPrefix(got[0], "memory>=80%: the target has no memory limit") {
		t.Errorf("unarmed %q: want memory>=80%% alone, for lack of a memory limit", got)
	}
	text := log.String()
	for _, want := range []string{
		`msg=watching target=` + leaky.URL, `triggers="memory>=80%, goroutines>=100000"`, "first_capture=",
		`msg="trigger cannot fire" target=` + leaky.URL, `expr="memory>=80%"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("log lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "trigger cannot fire") != 1 {
		t.Errorf("the unarmed trigger said %d times, want once:\n%s", strings.Count(text, "trigger cannot fire"), text)
	}
}
