package server

import (
	_ "embed"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/webguard"
)

//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPIDoc)
}

// defaultRange is the range of a request that gives neither from nor to.
const defaultRange = 24 * time.Hour

// timeRange reads from and to (RFC 3339, or Unix seconds): to defaults
// to now, from to a day before to. The range is checked against the
// server's limit.
func (s *Server) timeRange(q url.Values) (from, to time.Time, err error) {
	to = s.opts.now()
	if v := q.Get("to"); v != "" {
		if to, err = parseTime("to", v); err != nil {
			return
		}
	}
	from = to.Add(-defaultRange)
	if v := q.Get("from"); v != "" {
		if from, err = parseTime("from", v); err != nil {
			return
		}
	}
	switch {
	case !from.Before(to):
		err = badRequest("from %s is not before to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	case to.Sub(from) > s.opts.Limits.MaxRange:
		err = badRequest("range %s to %s is longer than %s: ask for less", from.Format(time.RFC3339), to.Format(time.RFC3339), s.opts.Limits.MaxRange)
	}
	return
}

// parseTime reads a time parameter: RFC 3339, or Unix seconds.
func parseTime(name, v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if sec, err := strconv.ParseFloat(v, 64); err == nil && sec >= 0 && sec < 1<<34 {
		return time.Unix(0, int64(sec*1e9)), nil
	}
	return time.Time{}, badRequest("%s=%q: want an RFC 3339 time (2026-11-28T09:00:00Z) or Unix seconds", name, v)
}

// limitParam reads limit, at most max; max when absent.
func limitParam(q url.Values, max int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return max, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, badRequest("limit=%q: want a number from 1 to %d", v, max)
	}
	return n, nil
}

// labelParams reads label=name=value parameters.
func labelParams(q url.Values) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range q["label"] {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, badRequest("label=%q: want name=value", l)
		}
		out[k] = v
	}
	return out, nil
}

// Target is a watched target as the targets route lists it.
type Target struct {
	Target string            `json:"target"`
	Labels map[string]string `json:"labels"`
	// Health is the service's: the worst of its open problems, its
	// availability and the collector's trouble (problem.HealthOf): ok,
	// unknown, degraded, problem or down; Status says why, and names
	// the worst open problem.
	Health      string          `json:"health"`
	Status      problem.Status  `json:"status"`
	LastCapture *store.Entry    `json:"last_capture,omitempty"`
	Watcher     *TargetHealth   `json:"watcher,omitempty"`
	Findings    []store.Finding `json:"findings"`
}

// healthSpan is how far back a target's problems count for its health.
const healthSpan = 24 * time.Hour

// availabilityEvents is how many of a target's newest events its health
// reads to know whether it is down: restarts may come between.
const availabilityEvents = 50

// targetFindings is how many of a target's newest findings the list
// carries.
const targetFindings = 3

func (s *Server) targets(w http.ResponseWriter, r *http.Request) {
	ts, err := s.targetList()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, struct {
		Targets []Target `json:"targets"`
	}{ts})
}

// targetList lists the store's targets, and the watcher's, by key.
func (s *Server) targetList() ([]Target, error) {
	keys, err := s.opts.Store.Targets()
	if err != nil {
		return nil, err
	}
	var health map[string]TargetHealth
	if s.opts.Health != nil {
		health = s.opts.Health()
		for k := range health {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	out := []Target{}
	for _, key := range keys {
		t := Target{Target: key, Labels: map[string]string{}, Health: "unknown"}
		// One query set for both: the newest entries and the newest
		// findings (Limit bounds each list).
		h, err := s.opts.Store.History(store.Query{Target: key, Limit: targetFindings})
		if err != nil {
			return nil, err
		}
		var sig problem.Signals
		if last, ok := newest(h.Runs, h.Bundles); ok {
			t.LastCapture = &last
			if last.Labels != nil {
				t.Labels = last.Labels
			}
			sig.Captured, sig.Partial, sig.BeforeOOM, sig.Last = true, last.Status != "complete", last.BeforeOOM, last.Time
		}
		if wh, ok := health[key]; ok {
			t.Watcher = &wh
			sig.Failures, sig.LastError, sig.Unarmed = wh.Failures, wh.LastError, wh.Unarmed
		}
		evs, err := s.opts.Store.Events(store.Query{Target: key, Limit: availabilityEvents})
		if err != nil {
			return nil, err
		}
		if e, down := store.Down(evs); down {
			sig.DownSince, sig.DownDetail = e.Time, e.Detail
		}
		if sig.Problems, err = store.Problems(s.opts.Store, store.Query{Target: key, Since: s.opts.now().Add(-healthSpan)}); err != nil {
			return nil, err
		}
		t.Status = problem.HealthOf(sig)
		t.Health = t.Status.Health
		t.Findings = h.Findings
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Target) int { return strings.Compare(a.Target, b.Target) })
	return out, nil
}

// newest returns the newer of the first entries of two newest-first lists.
func newest(a, b []store.Entry) (store.Entry, bool) {
	switch {
	case len(a) == 0 && len(b) == 0:
		return store.Entry{}, false
	case len(b) == 0 || len(a) > 0 && !a[0].Time.Before(b[0].Time):
		return a[0], true
	}
	return b[0], true
}

// Series is a target's series over a range.
type Series struct {
	Target string        `json:"target"`
	Metric string        `json:"metric"`
	Unit   string        `json:"unit"`
	From   time.Time     `json:"from"`
	To     time.Time     `json:"to"`
	Points []store.Point `json:"points"`
}

func (s *Server) series(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	target, metric := q.Get("target"), q.Get("metric")
	if target == "" || metric == "" {
		s.fail(w, r, badRequest("give target and metric (one of %s)", strings.Join(store.Metrics(), ", ")))
		return
	}
	unit, ok := store.MetricUnit(metric)
	if !ok {
		s.fail(w, r, badRequest("metric=%q: want one of %s", metric, strings.Join(store.Metrics(), ", ")))
		return
	}
	from, to, err := s.timeRange(q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	points, err := s.opts.Store.Series(target, metric, from, to)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if v := q.Get("step"); v != "" {
		step, err := time.ParseDuration(v)
		if err != nil || step < time.Second {
			s.fail(w, r, badRequest("step=%q: want a duration of a second or more, such as 1h", v))
			return
		}
		points = stepMax(points, from, step)
	}
	if len(points) > s.opts.Limits.MaxPoints {
		s.fail(w, r, &requestError{http.StatusUnprocessableEntity,
			fmt.Errorf("%d points in the range, more than %d: ask for a shorter range", len(points), s.opts.Limits.MaxPoints)})
		return
	}
	writeJSON(w, Series{Target: target, Metric: metric, Unit: unit, From: from, To: to, Points: points})
}

// stepMax keeps one point per step from from: the largest of the step,
// at its own time. The peaks are what a memory timeline is read for, and
// an average would hide them.
func stepMax(points []store.Point, from time.Time, step time.Duration) []store.Point {
	out := []store.Point{}
	bucket := int64(-1)
	for _, p := range points {
		b := int64(p.Time.Sub(from) / step)
		switch {
		case b != bucket:
			out = append(out, p)
			bucket = b
		case p.Value > out[len(out)-1].Value:
			out[len(out)-1] = p
		}
	}
	return out
}

// entryQuery reads the parameters that select entries and findings.
func (s *Server) entryQuery(q url.Values) (store.Query, error) {
	from, to, err := s.timeRange(q)
	if err != nil {
		return store.Query{}, err
	}
	labels, err := labelParams(q)
	if err != nil {
		return store.Query{}, err
	}
	limit, err := limitParam(q, s.opts.Limits.MaxEntries)
	if err != nil {
		return store.Query{}, err
	}
	return store.Query{Target: q.Get("target"), Since: from, Until: to, Labels: labels, Limit: limit}, nil
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sel, err := s.entryQuery(q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	kind := q.Get("kind")
	if kind != "" && kind != string(store.KindRun) && kind != string(store.KindBundle) {
		s.fail(w, r, badRequest("kind=%q: want run or bundle, or leave it out for both", kind))
		return
	}
	h, err := s.opts.Store.History(sel)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Runs    []store.Entry `json:"runs"`
		Bundles []store.Entry `json:"bundles"`
	}{h.Runs, h.Bundles}
	switch kind {
	case string(store.KindRun):
		out.Bundles = []store.Entry{}
	case string(store.KindBundle):
		out.Runs = []store.Entry{}
	}
	writeJSON(w, out)
}

// Event is something that happened to a target: a trigger's bundle, or
// what watch saw of its availability (down, up, restart, oom_kill).
type Event struct {
	// Kind is trigger, oom_kill, restart, down or up.
	Kind   string            `json:"kind"`
	Time   time.Time         `json:"time"`
	Target string            `json:"target"`
	Labels map[string]string `json:"labels,omitempty"`
	// Trigger is what fired, for a trigger event.
	Trigger *store.Trigger `json:"trigger,omitempty"`
	// CaptureSeconds is the time from the crossing to the complete bundle.
	CaptureSeconds float64 `json:"capture_seconds,omitempty"`
	// Detail is what watch saw: a down target's error, a restart's reason.
	Detail string `json:"detail,omitempty"`
	// Path is the bundle, or the capture before an OOM kill, when one is
	// stored.
	Path string `json:"path,omitempty"`
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	sel, err := s.entryQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h, err := s.opts.Store.History(sel)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	events, err := s.eventList(sel, h)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, struct {
		Events []Event `json:"events"`
	}{events})
}

// eventList gathers a query's events, newest first: the bundles of its
// history, and the availability events watch stored (with labels, only
// those of targets whose entries carry them). An OOM kill names the
// capture its entries mark as the last before it; a capture marked so
// with no stored kill (a store older than its events) is one too.
func (s *Server) eventList(q store.Query, h store.History) ([]Event, error) {
	events := []Event{}
	labels := map[string]map[string]string{}
	var marked []store.Entry
	for _, e := range slices.Concat(h.Bundles, h.Runs) {
		labels[e.Target] = e.Labels
		if e.Kind == store.KindBundle {
			events = append(events, Event{Kind: "trigger", Time: e.Time, Target: e.Target, Labels: e.Labels,
				Trigger: e.Trigger, CaptureSeconds: e.CaptureSeconds, Path: e.Path})
		}
		if e.BeforeOOM {
			marked = append(marked, e)
		}
	}
	stored, err := s.opts.Store.Events(store.Query{Target: q.Target, Since: q.Since, Until: q.Until, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	for _, se := range stored {
		l, seen := labels[se.Target]
		if len(q.Labels) > 0 && !seen {
			continue
		}
		events = append(events, Event{Kind: se.Kind, Time: se.Time, Target: se.Target, Labels: l, Detail: se.Detail})
	}
	slices.SortStableFunc(events, func(a, b Event) int { return b.Time.Compare(a.Time) })
	for _, e := range marked {
		if !nameKill(events, e) {
			events = append(events, Event{Kind: store.EventOOMKill, Time: e.Time, Target: e.Target, Labels: e.Labels, Path: e.Path})
		}
	}
	slices.SortStableFunc(events, func(a, b Event) int { return b.Time.Compare(a.Time) })
	return events, nil
}

// nameKill gives the capture e, marked as the last before an OOM kill,
// to the kill it preceded among events (newest first): the oldest of
// its target's kills at or after it that names no capture yet. False
// when there is none.
func nameKill(events []Event, e store.Entry) bool {
	for i := len(events) - 1; i >= 0; i-- {
		ev := &events[i]
		if ev.Kind == store.EventOOMKill && ev.Target == e.Target && ev.Path == "" && !ev.Time.Before(e.Time) {
			ev.Path = e.Path
			return true
		}
	}
	return false
}

// severities are the severities of findings, least first.
var severities = []string{"info", "low", "medium", "high"}

func (s *Server) findings(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sel, err := s.entryQuery(q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, sev := range q["severity"] {
		if !slices.Contains(severities, sev) {
			s.fail(w, r, badRequest("severity=%q: want one of %s", sev, strings.Join(severities, ", ")))
			return
		}
		sel.Severities = append(sel.Severities, sev)
	}
	h, err := s.opts.Store.History(sel)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, struct {
		Findings []store.Finding `json:"findings"`
	}{h.Findings})
}

// problems serves the problems of the captures a query selects: its
// target, labels and range (from, to), as heapscope history lists them.
func (s *Server) problems(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, to, err := s.timeRange(q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	labels, err := labelParams(q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ps, err := store.Problems(s.opts.Store, store.Query{Target: q.Get("target"), Since: from, Until: to, Labels: labels})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, struct {
		Problems []problem.Problem `json:"problems"`
	}{ps})
}

// profile serves one profile file of a stored run: the run by its path in
// the index, the profile by its path as the run's result.json lists it.
// Neither is ever joined to a directory unchecked.
func (s *Server) profile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	runPath, name := q.Get("run"), q.Get("profile")
	if runPath == "" || name == "" {
		s.fail(w, r, badRequest("give run (a run's path, as the runs route lists it) and profile (a profile's path in it)"))
		return
	}
	e, ok, err := s.opts.Store.EntryAt(runPath)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok {
		s.fail(w, r, notFound("run %q: no such run in the store", runPath))
		return
	}
	dir, err := s.opts.Store.RunDir(r.Context(), e)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := rundir.Read(dir)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	listed := false
	for _, p := range res.Profiles {
		listed = listed || p.Path == name
	}
	if !listed || path.Clean(name) != name {
		s.fail(w, r, notFound("run %s has no profile %q", e.Path, name))
		return
	}
	f, st, err := webguard.OpenFile(dir, name)
	if err != nil {
		s.fail(w, r, notFound("run %s: profile %s: %v", e.Path, name, err))
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", path.Base(name)))
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	io.Copy(w, f)
}
