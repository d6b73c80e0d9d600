package server

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/report/chart"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/trigger"
	"github.com/heapscope/heapscope/internal/view"
)

//go:embed ui
var uiFiles embed.FS

// pages are the UI's templates, parsed once.
var pages = template.Must(template.New("").ParseFS(uiFiles, "ui/*.html"))

// staticFiles are the UI's script and style sheet, served as files: the
// CSP allows no inline script.
func staticFiles() http.Handler {
	sub, err := fs.Sub(uiFiles, "ui/static")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // files, not listings
			return
		}
		files.ServeHTTP(w, r)
	})
}

// render writes a page, or the server's failure.
func (s *Server) render(w http.ResponseWriter, r *http.Request, page string, data any) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, page, data); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// failPage answers a page's request that failed, as text: a person reads it.
func (s *Server) failPage(w http.ResponseWriter, r *http.Request, err error) {
	if re, ok := err.(*requestError); ok {
		http.Error(w, s.public(re.Error()), re.status)
		return
	}
	s.log.Error("server", "path", r.URL.Path, "err", err)
	http.Error(w, s.public(err.Error()), http.StatusInternalServerError)
}

// when formats a time for a page: to the minute, in UTC.
func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") }

// timeTicks formats a time axis's ticks (Unix seconds, UTC) as finely as
// a range of span needs to tell them apart: seconds within a quarter of
// an hour, minutes within a few days, the day beyond.
func timeTicks(span time.Duration) func(float64) string {
	layout := "01-02 15:04"
	switch {
	case span <= 15*time.Minute:
		layout = "15:04:05"
	case span > 4*24*time.Hour:
		layout = "2006-01-02"
	}
	return func(v float64) string { return time.Unix(int64(v), 0).UTC().Format(layout) }
}

// targetLink is the target page of a target over the default range.
func targetLink(key string) string { return "/target?target=" + url.QueryEscape(key) }

// runLink is the page of a stored run or bundle.
func runLink(path string) string { return "/run/" + path + "/" }

// sparkSpan is the time the targets page's sparklines cover.
const sparkSpan = 7 * 24 * time.Hour

// targetRow is one row of the targets page.
type targetRow struct {
	Key, Link, Health string
	// Reasons say why the health is what it is, the worst first; Top is
	// the worst open problem.
	Reasons           []string
	Top               *problem.Problem
	TopLink           string
	Labels            []string
	RSS, Heap         template.HTML
	LastRSS, LastHeap string
	Last              *entryRow
}

// entryRow is a stored run or bundle as a page lists it.
type entryRow struct {
	When, Kind, Status, Path, Link string
}

func rowOf(e store.Entry) *entryRow {
	return &entryRow{When: when(e.Time), Kind: string(e.Kind), Status: e.Status, Path: e.Path, Link: runLink(e.Path)}
}

// labelList lists labels as name=value, group and instance left out
// (the key says them).
func labelList(l map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if k != "group" && k != "instance" {
			out = append(out, k+"="+l[k])
		}
	}
	return out
}

func (s *Server) targetsPage(w http.ResponseWriter, r *http.Request) {
	ts, err := s.targetList()
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	now := s.opts.now()
	rows := make([]targetRow, 0, len(ts))
	for _, t := range ts {
		row := targetRow{Key: t.Target, Link: targetLink(t.Target), Health: t.Health, Reasons: t.Status.Reasons, Top: t.Status.Top,
			Labels: labelList(t.Labels)}
		if t.LastCapture != nil {
			row.Last = rowOf(*t.LastCapture)
		}
		if t.Status.Top != nil {
			row.TopLink = problemLink(t.Target, t.Status.Top.Cause, now.Add(-healthSpan), now)
		}
		for _, m := range []struct {
			metric string
			svg    *template.HTML
			last   *string
		}{{store.MetricRSS, &row.RSS, &row.LastRSS}, {store.MetricHeapAfterGC, &row.Heap, &row.LastHeap}} {
			points, err := s.opts.Store.Series(t.Target, m.metric, now.Add(-sparkSpan), now)
			if err != nil {
				s.failPage(w, r, err)
				return
			}
			// A target watched for less than the span fills the width.
			from := now.Add(-sparkSpan)
			if len(points) > 1 && points[0].Time.After(from) {
				from = points[0].Time
			}
			*m.svg = sparkline(points, from, now)
			if len(points) > 0 {
				*m.last = humanize.Bytes(points[len(points)-1].Value)
			}
		}
		rows = append(rows, row)
	}
	s.render(w, r, "targets.html", struct {
		Title   string
		Span    string
		Targets []targetRow
	}{"Targets", "7 days", rows})
}

// sparkline draws points over [from, to] as a small SVG line
// (chart.Chart's Spark); a point alone is a dot.
func sparkline(points []store.Point, from, to time.Time) template.HTML {
	c := chart.Chart{Spark: true, Width: 160, Height: 32, Label: "no data",
		X: chart.Axis{Min: unixSeconds(from), Max: unixSeconds(to)}}
	if len(points) > 0 {
		c.Label = fmt.Sprintf("%d points", len(points))
		s := chart.Series{Color: "#4e79a7"}
		if len(points) == 1 {
			s.Style = chart.Dots
		}
		for _, p := range points {
			s.Points = append(s.Points, chart.Point{X: unixSeconds(p.Time), Y: p.Value})
		}
		c.Series = []chart.Series{s}
	}
	var b strings.Builder
	c.WriteSVG(&b) // a strings.Builder takes every write
	return template.HTML(b.String())
}

// timeline is one chart of the target page.
type timeline struct {
	Metric, ProfileType string
	SVG                 template.HTML
	FromUnix, ToUnix    string
	Left, Right         string
	Width, Points       int
}

// timelineMetrics are the target page's charts: the metric, its title,
// and the profile whose merge a range selected on it opens.
var timelineMetrics = []struct{ metric, title, profile string }{
	{store.MetricRSS, "RSS", "heap"},
	{store.MetricHeapAfterGC, "Heap after GC", "heap"},
	{store.MetricAllocRate, "Allocation rate", "allocs"},
	{store.MetricGoroutines, "Goroutines", "goroutine"},
}

// presetRange is a link to the target page over a common range.
type presetRange struct{ Name, Link string }

func (s *Server) targetPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := q.Get("target")
	if key == "" {
		s.failPage(w, r, badRequest("give target: a target's key, as the targets page links it"))
		return
	}
	from, to, err := s.timeRange(q)
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	h, err := s.opts.Store.History(store.Query{Target: key, Since: from, Until: to, Limit: s.opts.Limits.MaxEntries})
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	if q.Get("from") == "" && q.Get("to") == "" {
		from = fitToData(from, to, slices.Concat(h.Runs, h.Bundles))
	}
	var labels map[string]string
	if last, ok := newest(h.Runs, h.Bundles); ok {
		labels = last.Labels
	}
	evs, err := s.eventList(store.Query{Target: key, Since: from, Until: to, Limit: s.opts.Limits.MaxEntries}, h)
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	ps, err := store.Problems(s.opts.Store, store.Query{Target: key, Since: from, Until: to})
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	problems := problemRowsOf(ps, from, to)
	tl := timelineOf(evs, ps, to)
	var runs []*entryRow
	for _, e := range slices.Concat(h.Runs, h.Bundles) {
		runs = append(runs, rowOf(e))
	}
	slices.SortFunc(runs, func(a, b *entryRow) int { return strings.Compare(b.When+b.Path, a.When+a.Path) })

	var charts []timeline
	for _, m := range timelineMetrics {
		points, err := s.opts.Store.Series(key, m.metric, from, to)
		if err != nil {
			s.failPage(w, r, err)
			return
		}
		unit, _ := store.MetricUnit(m.metric)
		c := chart.Chart{ID: "chart-" + m.metric, Title: m.title, Width: 960, Height: 260,
			X: chart.Axis{Format: timeTicks(to.Sub(from)),
				Tight: true, Min: unixSeconds(from), Max: unixSeconds(to)},
			Y: chart.Axis{Bytes: unit == "bytes", Format: valueFormat(unit)}, Marks: tl.marks, Bands: tl.bands, Keys: tl.keys, MarksLabel: "events"}
		series := chart.Series{Name: m.title, Color: "#4e79a7", Style: chart.Dots}
		for _, p := range points {
			series.Points = append(series.Points, chart.Point{X: unixSeconds(p.Time), Y: p.Value,
				Tip: when(p.Time) + ": " + valueFormat(unit)(p.Value)})
		}
		if len(series.Points) == 0 {
			// An empty range still shows its axis, from and to.
			series.Points = []chart.Point{{X: unixSeconds(from)}}
			series.Name += " (no data)"
		}
		c.Series = []chart.Series{series}
		if m.metric == store.MetricRSS {
			limits, err := s.memoryLines(key, from, to, h.Bundles)
			if err != nil {
				s.failPage(w, r, err)
				return
			}
			c.Series = append(c.Series, limits...)
		}
		var svg bytes.Buffer
		if err := c.WriteSVG(&svg); err != nil {
			s.failPage(w, r, err)
			return
		}
		xs := c.XScale()
		charts = append(charts, timeline{Metric: m.metric, ProfileType: m.profile, SVG: template.HTML(svg.String()),
			FromUnix: strconv.FormatFloat(xs.From, 'f', 0, 64), ToUnix: strconv.FormatFloat(xs.To, 'f', 0, 64),
			Left: strconv.FormatFloat(xs.Left, 'f', 1, 64), Right: strconv.FormatFloat(xs.Right, 'f', 1, 64),
			Width: xs.Width, Points: len(points)})
	}
	var presets []presetRange
	for _, p := range []struct {
		name string
		d    time.Duration
	}{{"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}} {
		now := s.opts.now()
		presets = append(presets, presetRange{p.name, targetLink(key) + "&from=" + url.QueryEscape(now.Add(-p.d).UTC().Format(time.RFC3339)) +
			"&to=" + url.QueryEscape(now.UTC().Format(time.RFC3339))})
	}
	fromText, toText := from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339)
	s.render(w, r, "target.html", struct {
		Title, Key, From, To string
		Labels               []string
		Problems             []problemRow
		ProblemsAPI          string
		Presets              []presetRange
		Charts               []timeline
		Events               []eventRow
		Runs                 []*entryRow
	}{key, key, fromText, toText, labelList(labels), problems,
		"/api/v1/problems?target=" + url.QueryEscape(key) + "&from=" + url.QueryEscape(fromText) + "&to=" + url.QueryEscape(toText),
		presets, charts, tl.rows, runs})
}

// memoryLines are the lines drawn on a target's RSS chart over from–to:
// its cgroup's memory limit, as its captures measured it, and the
// threshold of each memory or RSS trigger that fired in the range (a
// share of the limit drawn at that share of it).
func (s *Server) memoryLines(key string, from, to time.Time, bundles []store.Entry) ([]chart.Series, error) {
	points, err := s.opts.Store.Series(key, store.MetricLimit, from, to)
	if err != nil || len(points) == 0 && len(bundles) == 0 {
		return nil, err
	}
	var out []chart.Series
	var limit float64
	if len(points) > 0 {
		line := chart.Series{Color: "#e15759", Style: chart.Step}
		for i, p := range points {
			x := unixSeconds(p.Time)
			if i == 0 {
				x = unixSeconds(from)
			}
			line.Points = append(line.Points, chart.Point{X: x, Y: p.Value, Tip: "memory limit " + humanize.Bytes(p.Value)})
		}
		limit = points[len(points)-1].Value
		line.Name = "memory limit " + humanize.Bytes(limit)
		line.Points = append(line.Points, chart.Point{X: unixSeconds(to), Y: limit, Tip: "memory limit " + humanize.Bytes(limit)})
		out = append(out, line)
	}
	seen := map[string]bool{}
	for _, b := range bundles {
		t := b.Trigger
		if t == nil || seen[t.Expr] {
			continue
		}
		e, err := trigger.Parse(t.Expr)
		if err != nil {
			continue // an expression of an older or newer watch
		}
		var y float64
		switch {
		case (e.Metric == trigger.RSS || e.Metric == trigger.Memory) && e.Unit == trigger.Bytes:
			y = e.Threshold
		case e.Metric == trigger.Memory && e.Unit == trigger.Percent && limit > 0:
			y = e.Threshold / 100 * limit
		default:
			continue
		}
		seen[t.Expr] = true
		tip := "trigger " + t.Expr + ": " + humanize.Bytes(y)
		out = append(out, chart.Series{Name: tip, Color: "#f28e2b", Style: chart.Line, Dashed: true,
			Points: []chart.Point{{X: unixSeconds(from), Y: y, Tip: tip}, {X: unixSeconds(to), Y: y, Tip: tip}}})
	}
	return out, nil
}

// fitToData narrows the default range from–to to the captures it holds:
// eight minutes of data are drawn across the chart, not as a line of
// dots at the right end of a day. The range begins a little before the
// oldest capture (a twentieth of the span, at least a minute); with no
// capture it stays as it is.
func fitToData(from, to time.Time, entries []store.Entry) time.Time {
	oldest := to
	for _, e := range entries {
		if e.Time.Before(oldest) {
			oldest = e.Time
		}
	}
	if len(entries) == 0 {
		return from
	}
	pad := max(to.Sub(oldest)/20, time.Minute)
	return latest(from, oldest.Add(-pad))
}

// latest is the later of two times.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// problemRow is a problem as the target page lists it.
type problemRow struct {
	// State is the state's name (a class), StateText as people read it.
	// Where is the site shortened (problem.ShortWhere), WhereFull whole.
	State, StateText, Severity, Headline, Link, Where, WhereFull, FirstSeen, LastSeen, Latest, LatestLink string
	Captures                                                                                              int
}

// problemRowsOf lists problems as a page does, each linking to its page
// over from–to.
func problemRowsOf(ps []problem.Problem, from, to time.Time) []problemRow {
	rows := make([]problemRow, 0, len(ps))
	for _, p := range ps {
		row := problemRow{State: string(p.State), StateText: p.StateText(), Severity: p.Severity, Headline: p.Headline(), Link: problemLink(p.Target, p.Cause, from, to), Where: problem.ShortWhere(p.Where), WhereFull: p.Where,
			FirstSeen: when(p.FirstSeen), LastSeen: when(p.LastSeen), Captures: p.Captures, Latest: p.Latest}
		if p.Latest != "" {
			row.LatestLink = runLink(p.Latest)
		}
		rows = append(rows, row)
	}
	return rows
}

// eventRow is one event in a target page's list.
type eventRow struct{ When, What, Path, Link string }

// timeline is what a target page draws of its events on every chart:
// a mark per trigger, restart, OOM kill and problem start, a band over
// each outage, and the list of them.
type eventTimeline struct {
	marks []chart.Mark
	bands []chart.Band
	keys  []chart.Key
	rows  []eventRow
}

// The colours of a timeline's events.
const (
	colorTrigger = "#e15759"
	colorOOMKill = "#b07aa1"
	colorRestart = "#9c755f"
	colorProblem = "#f28e2b"
	colorOutage  = "#e15759"
)

// timelineOf lays out a target's events (newest first) and the starts of
// its problems over a range that ends at to: an outage lasts from its
// down event to the next up event, or to the range's end.
func timelineOf(evs []Event, ps []problem.Problem, to time.Time) eventTimeline {
	var tl eventTimeline
	seen := map[string]bool{}
	key := func(name, color string, faint bool) {
		if !seen[name] {
			seen[name] = true
			tl.keys = append(tl.keys, chart.Key{Name: name, Color: color, Faint: faint})
		}
	}
	upAt := to
	for _, ev := range evs {
		row := eventRow{When: when(ev.Time), Path: ev.Path}
		if ev.Path != "" {
			row.Link = runLink(ev.Path)
		}
		mark := func(color, name string) {
			tl.marks = append(tl.marks, chart.Mark{X: unixSeconds(ev.Time), Color: color, Tip: row.When + " " + row.What})
			key(name, color, false)
		}
		switch ev.Kind {
		case "trigger":
			row.What = "bundle"
			if ev.Trigger != nil {
				row.What = triggerLine(ev.Trigger)
			}
			mark(colorTrigger, "trigger")
		case store.EventOOMKill:
			row.What = "OOM kill"
			if ev.Detail != "" {
				row.What += " (" + ev.Detail + ")"
			}
			if ev.Path != "" {
				row.What += "; the last capture before it:"
			}
			mark(colorOOMKill, "OOM kill")
		case store.EventRestart:
			row.What = "restarted (" + ev.Detail + ")"
			mark(colorRestart, "restart")
		case store.EventUp:
			row.What = "up again: " + ev.Detail
			upAt = ev.Time
		case store.EventDown:
			row.What = "down: " + ev.Detail
			tip := "down from " + row.When + " to " + when(upAt)
			if upAt.Equal(to) {
				tip = "down since " + row.When
			}
			tl.bands = append(tl.bands, chart.Band{From: unixSeconds(ev.Time), To: unixSeconds(upAt), Color: colorOutage, Tip: tip})
			key("down", colorOutage, true)
			upAt = to
		default:
			continue
		}
		tl.rows = append(tl.rows, row)
	}
	for _, p := range ps {
		if p.State == problem.Resolved || problem.Rank(p.Severity) < problem.Rank("medium") {
			continue
		}
		tl.marks = append(tl.marks, chart.Mark{X: unixSeconds(p.FirstSeen), Color: colorProblem,
			Tip: when(p.FirstSeen) + " first seen: " + p.Severity + " " + p.Headline()})
		key("problem start", colorProblem, false)
	}
	return tl
}

// unixSeconds is a time as a chart's x.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// valueFormat writes a value of a unit for a chart.
func valueFormat(unit string) func(float64) string {
	switch unit {
	case "bytes":
		return humanize.Bytes
	case "bytes/s":
		return func(v float64) string { return humanize.Bytes(v) + "/s" }
	case "fraction":
		return humanize.Percent
	case "seconds":
		return humanize.Seconds
	}
	return humanize.Count
}

// findingRow is one finding of the feed.
type findingRow struct {
	When, Severity, Target, TargetLink, Title, Where, Link string
}

func (s *Server) findingsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	min := q.Get("min")
	if min == "" {
		min = "low"
	}
	i := slices.Index(severities, min)
	if i < 0 {
		s.failPage(w, r, badRequest("min=%q: want one of %s", min, strings.Join(severities, ", ")))
		return
	}
	now := s.opts.now()
	h, err := s.opts.Store.History(store.Query{Since: now.Add(-sparkSpan), Until: now, Severities: severities[i:], Limit: 500})
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	rows := make([]findingRow, 0, len(h.Findings))
	for _, f := range h.Findings {
		row := findingRow{When: when(f.Time), Severity: f.Severity, Target: f.Target, TargetLink: targetLink(f.Target), Title: f.Title, Where: f.Where}
		if f.Source != store.SourceSeries && f.Path != "" {
			row.Link = runLink(f.Path)
		}
		rows = append(rows, row)
	}
	s.render(w, r, "findings.html", struct {
		Title, Severity, Span string
		Findings              []findingRow
	}{"Findings", min, "7 days", rows})
}

// viewCache keeps the view servers lately opened, by key: a stored
// run's (its path), or a merge's. Each builds pprof's UI of a profile
// once, on first use.
type viewCache struct {
	mu    sync.Mutex
	views map[string]*view.Server
	order []string // oldest first
}

// maxViews bounds the views a cache keeps.
const maxViews = 16

// runPage serves /run/PATH/…: the run directory the index has at PATH
// (kind/slug/stamp), through view's UI — its report, flame graphs and
// pprof's UI of each profile. A path the index does not hold is 404.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/run/")
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) < 3 {
		s.failPage(w, r, notFound("no run at %s", r.URL.Path))
		return
	}
	runPath := strings.Join(parts[:3], "/")
	e, ok, err := s.opts.Store.EntryAt(runPath)
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	if !ok {
		s.failPage(w, r, notFound("no run %s in the store", runPath))
		return
	}
	if len(parts) == 3 {
		http.Redirect(w, r, "/run/"+e.Path+"/", http.StatusMovedPermanently)
		return
	}
	// An OOM kill marks a capture after it is stored: a view opened
	// before the mark is not the one after.
	key := e.Path
	if e.BeforeOOM {
		key += " before OOM"
	}
	v, err := s.runViews.get(key, func() (*view.Server, error) {
		dir, err := s.opts.Store.RunDir(r.Context(), e)
		if err != nil {
			return nil, err
		}
		return view.Open(dir, view.Options{Embedded: true, Capture: captureOf(e)})
	})
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	h := http.StripPrefix("/run/"+e.Path, v)
	if strings.HasPrefix(parts[3], "run/") {
		// The run's own files, as they are: nothing in them runs here.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
		h.ServeHTTP(w, r)
		return
	}
	withNonce(h).ServeHTTP(w, r)
}

// captureOf is what the index says of a stored run, for its page.
func captureOf(e store.Entry) *view.Capture {
	c := &view.Capture{Bundle: e.Kind == store.KindBundle, Target: e.Target, BeforeOOM: e.BeforeOOM}
	if t := e.Trigger; t != nil {
		c.Trigger = triggerLine(t)
	}
	return c
}

// triggerLine says a trigger and the value that crossed it.
func triggerLine(t *store.Trigger) string {
	return t.Expr + " fired at " + trigger.FormatValue(t.Value, t.Unit)
}

// get returns the view kept for key, opening and keeping it with open
// when there is none (open nil: none is opened).
func (c *viewCache) get(key string, open func() (*view.Server, error)) (*view.Server, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.views[key]; ok {
		return v, nil
	}
	if open == nil {
		return nil, nil
	}
	v, err := open()
	if err != nil {
		return nil, err
	}
	c.put(key, v)
	return v, nil
}

// set keeps v for key, in place of any view kept for it.
func (c *viewCache) set(key string, v *view.Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(key, v)
}

// put keeps v for key, forgetting the oldest beyond maxViews (c.mu held).
func (c *viewCache) put(key string, v *view.Server) {
	if c.views == nil {
		c.views = map[string]*view.Server{}
	}
	if _, ok := c.views[key]; !ok {
		if len(c.order) >= maxViews {
			delete(c.views, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, key)
	}
	c.views[key] = v
}
