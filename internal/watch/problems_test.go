package watch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/storetest"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/watch/config"
)

func TestProblemChanges(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	since := t0.Add(time.Hour) // the watcher began then
	now := t0.Add(2 * time.Hour)
	p := func(state problem.State, sev string, first time.Time) problem.Problem {
		return problem.Problem{Cause: "leak at main.put", State: state, Severity: sev, FirstSeen: first}
	}
	was := func(state problem.State, sev string, at time.Time) map[string]told {
		return map[string]told{"leak at main.put": {state, sev, at}}
	}
	tests := []struct {
		name  string
		prev  map[string]told
		p     problem.Problem
		first bool
		want  string // "" for no news
	}{
		{"opened while watched", nil, p(problem.Open, "high", since.Add(time.Minute)), true, "opened"},
		{"open before this watcher began", nil, p(problem.Open, "high", t0), true, ""},
		{"opened later", map[string]told{}, p(problem.Open, "medium", t0), false, "opened"},
		{"low is no news", nil, p(problem.Open, "low", since.Add(time.Minute)), true, ""},
		{"told already", was(problem.Open, "high", now.Add(-time.Minute)), p(problem.Open, "high", t0), false, ""},
		{"escalated", was(problem.Open, "medium", now.Add(-time.Minute)), p(problem.Open, "high", t0), false, "escalated"},
		{"resolved", was(problem.Open, "high", now.Add(-time.Minute)), p(problem.Resolved, "high", t0), false, "resolved"},
		{"resolved, told", was(problem.Resolved, "high", now.Add(-5*time.Hour)), p(problem.Resolved, "high", t0), false, ""},
		{"reopened", was(problem.Resolved, "high", now.Add(-time.Minute)), p(problem.Reopened, "high", t0), false, "reopened"},
		{"still open after the repeat interval", was(problem.Open, "high", now.Add(-4*time.Hour)), p(problem.Open, "high", t0), false, "still open"},
		{"told unplaced, now at its line", map[string]told{"leak": {problem.Open, "high", now.Add(-time.Minute)}}, p(problem.Open, "high", t0), false, "placed"},
		{"told unplaced and resolved, now at a line", map[string]told{"leak": {problem.Resolved, "high", now.Add(-time.Minute)}}, p(problem.Open, "high", since.Add(time.Minute)), false, "opened"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next := problemChanges(tt.prev, []problem.Problem{tt.p}, now, since, 4*time.Hour, tt.first)
			var what string
			if len(got) > 0 {
				what = got[0].what
			}
			if len(got) > 1 || what != tt.want {
				t.Fatalf("news %+v, want %q", got, tt.want)
			}
			if problem.Rank(tt.p.Severity) >= problem.Rank("medium") {
				n, ok := next[tt.p.Cause]
				if !ok || n.state != tt.p.State || n.severity != tt.p.Severity || (tt.want != "" && !n.at.Equal(now)) {
					t.Errorf("told after: %+v, want the problem as it is now", n)
				}
			}
		})
	}
}

// TestRun_problemsReachAlertmanager commits captures of a leaking target
// after its watcher began: the webhook, in Alertmanager's format, gets
// one HeapscopeProblem alert for the leak, not one per capture, with the
// target's labels and a link to its page, and the alert again once the
// repeat interval has passed.
func TestRun_problemsReachAlertmanager(t *testing.T) {
	var (
		mu     sync.Mutex
		alerts []alert
	)
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v2/alerts" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var got []alert
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("decode alerts: %v", err)
		}
		mu.Lock()
		alerts = append(alerts, got...)
		mu.Unlock()
	}))
	defer am.Close()
	received := func() []alert {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(alerts)
	}

	const key = "http://10.0.0.7:6060/debug/pprof/"
	cfg, err := config.ForURLs([]string{"http://10.0.0.7:6060"}, config.Settings{Every: time.Hour, Window: time.Second, Timeout: time.Second, Poll: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Webhook = &config.Webhook{URL: am.URL, Timeout: 5 * time.Second, Format: config.FormatAlertmanager,
		RepeatInterval: 4 * time.Hour, ExternalURL: "https://heapscope.example"}
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	w, err := New(Options{Config: cfg, Store: st, Version: "test", now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := cfg.Targets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	w.update(context.Background(), ts, false)
	wt := w.watchedList()[0]
	for i := range 3 {
		storetest.Commit(t, st, store.KindRun, key, storetest.Leaky, store.Entry{Time: now.Add(time.Duration(i+1) * time.Minute), Scheduled: true})
		now = now.Add(15 * time.Minute)
		w.followProblems(wt, nil)
	}
	got := testserver.WaitFor(t, time.Minute, "an alert", func() ([]alert, bool) { a := received(); return a, len(a) > 0 })
	time.Sleep(200 * time.Millisecond) // any alert sent twice would be here by now
	if got = received(); len(got) != 1 {
		t.Fatalf("%d alerts for three captures of one leak, want 1: %+v", len(got), got)
	}
	a := got[0]
	if a.Labels["alertname"] != "HeapscopeProblem" || a.Labels["target"] != key || a.Labels["severity"] != "high" ||
		a.Labels["group"] == "" || !strings.HasSuffix(a.Annotations["where"], "leakycache.go:38") ||
		!strings.HasPrefix(a.GeneratorURL, "https://heapscope.example/problem?target=http%3A%2F%2F10.0.0.7%3A6060%2Fdebug%2Fpprof%2F&cause=leak+at+") ||
		!a.EndsAt.After(now) || !strings.Contains(a.Annotations["summary"], "problem opened") {
		t.Errorf("alert %+v: want HeapscopeProblem of the target, high, at leakycache.go:38, linked, firing, said opened", a)
	}
	now = now.Add(5 * time.Hour)
	w.followProblems(wt, nil)
	got = testserver.WaitFor(t, time.Minute, "a second alert", func() ([]alert, bool) { a := received(); return a, len(a) > 1 })
	if len(got) != 2 || !strings.Contains(got[1].Annotations["summary"], "problem still open") {
		t.Errorf("after the repeat interval: %+v, want the alert said again, still open", got)
	}
	w.drainOutbox()
}

func TestAlertOf(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		ev        Event
		alertname string
		ends      time.Time
	}{
		{Event{Kind: "bundle", Trigger: "memory>=80%", Time: at}, "HeapscopeTrigger", at.Add(time.Hour)},
		{Event{Kind: "restart", OOMKill: true, Time: at}, "HeapscopeOOMKill", at.Add(time.Hour)},
		{Event{Kind: "restart", Time: at}, "HeapscopeRestart", at.Add(time.Hour)},
		{Event{Kind: "down", Time: at}, "HeapscopeTargetDown", at.Add(8 * time.Hour)},
		{Event{Kind: "up", Time: at}, "HeapscopeTargetDown", at},
		{Event{Kind: "problem", Change: "resolved", Problem: &problem.Problem{Severity: "high", FirstSeen: at.Add(-time.Hour)}, Time: at}, "HeapscopeProblem", at},
	}
	for _, tt := range tests {
		a := alertOf(Event{Kind: tt.ev.Kind, Trigger: tt.ev.Trigger, OOMKill: tt.ev.OOMKill, Change: tt.ev.Change, Problem: tt.ev.Problem,
			Time: tt.ev.Time, Target: "http://10.0.0.7:6060/debug/pprof/", Labels: map[string]string{"team": "pay"}}, 8*time.Hour)
		if a.Labels["alertname"] != tt.alertname || !a.EndsAt.Equal(tt.ends) || a.Labels["team"] != "pay" || a.Labels["target"] == "" {
			t.Errorf("%s %s: alert %+v, want %s ending %s with the target's labels", tt.ev.Kind, tt.ev.Change, a, tt.alertname, tt.ends)
		}
	}
}
