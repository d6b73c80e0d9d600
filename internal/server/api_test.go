package server_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/server"
)

// get serves one GET through s and returns the response.
func get(t *testing.T, s http.Handler, target string, header ...string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w.Result()
}

func newServer(t *testing.T, opts server.Options) *server.Server {
	t.Helper()
	if opts.Store == nil {
		opts.Store = filledStore(t).st
	}
	s, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openAPIDocument is the document the server serves.
func openAPIDocument(t *testing.T) []byte {
	t.Helper()
	resp := get(t, newServer(t, server.Options{}), "/api/v1/openapi.json")
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("openapi.json: %d %v", resp.StatusCode, err)
	}
	return body
}

// openAPISchemas compiles the document's schemas, each addressable by a
// JSON pointer into it.
func openAPISchemas(t *testing.T) (map[string]any, func(ptr string) *jsonschema.Schema) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openAPIDocument(t)))
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	const id = "https://heapscope.invalid/openapi.json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	return doc.(map[string]any), func(ptr string) *jsonschema.Schema {
		s, err := c.Compile(id + "#" + ptr)
		if err != nil {
			t.Fatalf("schema %s: %v", ptr, err)
		}
		return s
	}
}

// escapePointer escapes a key for a JSON pointer.
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// TestOpenAPI_everyRouteAnswersAsDocumented walks every operation of the
// document over a store a real watch filled: each is called with its
// required parameters (from the store) alone, then with every optional
// one, and each answer's status and body must be what the document says.
func TestOpenAPI_everyRouteAnswersAsDocumented(t *testing.T) {
	f := filledStore(t)
	res, err := rundir.Read(f.st.Dir() + "/" + f.runs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	from := f.runs[len(f.runs)-1].Time.Add(-time.Hour).Format(time.RFC3339)
	to := f.bundle.Time.Add(time.Hour).Format(time.RFC3339)
	values := map[string][]string{ // parameters taken from the store
		"target": {f.target}, "run": {f.runs[0].Path}, "profile": {res.Profiles[0].Path},
		"from": {from}, "to": {to}, "label": {"group=cli"}, "metric": {"heap_after_gc"},
		"severity": {"high", "medium", "low", "info"}, "limit": {"50"}, "kind": {"bundle"},
		// The diff's base: the older run alone; from–to holds both.
		"base_from": {from}, "base_to": {f.runs[0].Time.Format(time.RFC3339Nano)},
		"type": {"heap"}, "format": {"folded"}, "sample": {"inuse_space"}, "step": {"1h"},
	}
	s := newServer(t, server.Options{})
	doc, schema := openAPISchemas(t)
	resolve := func(p map[string]any) map[string]any {
		if ref, ok := p["$ref"].(string); ok {
			return doc["components"].(map[string]any)["parameters"].(map[string]any)[strings.TrimPrefix(ref, "#/components/parameters/")].(map[string]any)
		}
		return p
	}
	paths := doc["paths"].(map[string]any)
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		op := paths[path].(map[string]any)["get"].(map[string]any)
		var params []map[string]any
		if ps, ok := op["parameters"].([]any); ok {
			for _, p := range ps {
				params = append(params, resolve(p.(map[string]any)))
			}
		}
		for _, all := range []bool{false, true} {
			q := url.Values{}
			for _, p := range params {
				name := p["name"].(string)
				// target selects the test's data wherever it is a parameter.
				if p["required"] == true || all || name == "target" {
					v, ok := values[name]
					if !ok {
						t.Fatalf("%s: no value for parameter %s", path, name)
					}
					q[name] = v
				}
			}
			t.Run(fmt.Sprintf("%s all=%v", path, all), func(t *testing.T) {
				resp := get(t, s, path+"?"+q.Encode())
				body, _ := io.ReadAll(resp.Body)
				status := fmt.Sprint(resp.StatusCode)
				answer, ok := op["responses"].(map[string]any)[status].(map[string]any)
				if !ok {
					t.Fatalf("GET %s?%s: status %s, which the document does not list: %s", path, q.Encode(), status, body)
				}
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET %s?%s: %s %s", path, q.Encode(), status, body)
				}
				ptr := "/paths/" + escapePointer(path) + "/get/responses/" + status + "/content/"
				ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
				if _, ok := answer["content"].(map[string]any)[ct]; !ok {
					t.Fatalf("content type %q, which the document does not list", ct)
				}
				if ct != "application/json" {
					// A profile is never empty; folded stacks are when the
					// runs allocated nothing in their windows.
					if ct == "application/octet-stream" && len(body) == 0 {
						t.Errorf("an empty %s body", ct)
					}
					return
				}
				v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
				if err != nil {
					t.Fatalf("body is not JSON: %v\n%s", err, body)
				}
				if err := schema(ptr + "application~1json/schema").Validate(v); err != nil {
					t.Errorf("GET %s?%s: the body is not what the document says: %v\n%s", path, q.Encode(), err, body)
				}
			})
		}
	}
}

// decode GETs target from s and decodes its JSON body into v, checking
// the status.
func decode(t *testing.T, s http.Handler, target string, status int, v any) {
	t.Helper()
	resp := get(t, s, target)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d %s, want %d", target, resp.StatusCode, body, status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", target, err, body)
	}
}

func TestAPI_answersWhatTheStoreHolds(t *testing.T) {
	f := filledStore(t)
	s := newServer(t, server.Options{})
	q := "target=" + url.QueryEscape(f.target) + "&from=" + url.QueryEscape(f.runs[1].Time.Add(-time.Minute).Format(time.RFC3339))

	var targets struct{ Targets []server.Target }
	decode(t, s, "/api/v1/targets", 200, &targets)
	// The bundle, the last capture, is marked as the one before an OOM
	// kill, and nothing was captured since: the service is not known to
	// be up, whatever the capture's own status.
	if len(targets.Targets) != 1 || targets.Targets[0].Target != f.target || targets.Targets[0].Health != "down" ||
		len(targets.Targets[0].Status.Reasons) == 0 || !strings.HasPrefix(targets.Targets[0].Status.Reasons[0], "OOM-killed after its last capture") ||
		targets.Targets[0].LastCapture == nil || targets.Targets[0].LastCapture.Path != f.bundle.Path {
		t.Errorf("targets %+v: want the one target, down for its OOM kill, its last capture the bundle", targets.Targets)
	}

	var series server.Series
	decode(t, s, "/api/v1/series?metric=heap_after_gc&"+q, 200, &series)
	if len(series.Points) != 3 || series.Unit != "bytes" || series.Points[0].Value <= 0 || !series.Points[0].Time.Before(series.Points[1].Time) {
		t.Errorf("series %+v: want a point of each capture (two runs and the bundle), in bytes, oldest first", series)
	}

	// A step longer than the range keeps its largest point.
	var stepped server.Series
	decode(t, s, "/api/v1/series?metric=heap_after_gc&step=24h&"+q, 200, &stepped)
	largest := series.Points[0]
	for _, p := range series.Points {
		if p.Value > largest.Value {
			largest = p
		}
	}
	if len(stepped.Points) != 1 || stepped.Points[0] != largest {
		t.Errorf("step=24h: %+v, want the one largest point %+v", stepped.Points, largest)
	}

	var runs struct{ Runs, Bundles []json.RawMessage }
	decode(t, s, "/api/v1/runs?"+q, 200, &runs)
	if len(runs.Runs) != 2 || len(runs.Bundles) != 1 {
		t.Errorf("%d runs, %d bundles: want 2 and 1", len(runs.Runs), len(runs.Bundles))
	}
	decode(t, s, "/api/v1/runs?kind=bundle&"+q, 200, &runs)
	if len(runs.Runs) != 0 || len(runs.Bundles) != 1 {
		t.Errorf("kind=bundle: %d runs, %d bundles: want 0 and 1", len(runs.Runs), len(runs.Bundles))
	}
	decode(t, s, "/api/v1/runs?label=group=nope&"+q, 200, &runs)
	if len(runs.Runs)+len(runs.Bundles) != 0 {
		t.Errorf("label=group=nope: %d entries, want none", len(runs.Runs)+len(runs.Bundles))
	}

	var events struct{ Events []server.Event }
	decode(t, s, "/api/v1/events?"+q, 200, &events)
	var kinds []string
	for _, e := range events.Events {
		kinds = append(kinds, e.Kind)
		if e.Path != f.bundle.Path {
			t.Errorf("event %+v: want the bundle's path", e)
		}
	}
	if !slices.Equal(kinds, []string{"trigger", "oom_kill"}) || events.Events[0].Trigger == nil || events.Events[0].Trigger.Expr != "memory>=80%" {
		t.Errorf("events %+v: want the trigger's bundle and the OOM kill it preceded", events.Events)
	}

	res, err := rundir.Read(f.st.Dir() + "/" + f.runs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	resp := get(t, s, "/api/v1/profile?run="+url.QueryEscape(f.runs[0].Path)+"&profile="+url.QueryEscape(res.Profiles[0].Path))
	zr, err := gzip.NewReader(resp.Body)
	if resp.StatusCode != 200 || err != nil {
		t.Fatalf("profile: %d, %v", resp.StatusCode, err)
	}
	if n, err := io.Copy(io.Discard, zr); err != nil || n == 0 {
		t.Errorf("profile: %d bytes, %v: want the stored profile", n, err)
	}
}

func TestAPI_badRequests(t *testing.T) {
	f := filledStore(t)
	s := newServer(t, server.Options{Limits: server.Limits{MaxPoints: 1}})
	target := url.QueryEscape(f.target)
	run := url.QueryEscape(f.runs[0].Path)
	tests := []struct {
		name, target string
		status       int
		want         string
	}{
		{"series without metric", "/api/v1/series?target=" + target, 400, "give target and metric"},
		{"unknown metric", "/api/v1/series?target=" + target + "&metric=heap", 400, `metric="heap": want one of rss`},
		{"bad time", "/api/v1/runs?from=yesterday", 400, `from="yesterday": want an RFC 3339 time`},
		{"from after to", "/api/v1/runs?from=2026-11-28T00:00:00Z&to=2026-11-27T00:00:00Z", 400, "is not before to"},
		{"range past the limit", "/api/v1/runs?from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", 400, "is longer than"},
		{"limit zero", "/api/v1/findings?limit=0", 400, "limit=\"0\": want a number from 1 to 10000"},
		{"limit past the bound", "/api/v1/findings?limit=10001", 400, "want a number from 1 to 10000"},
		{"bad label", "/api/v1/runs?label=group", 400, `label="group": want name=value`},
		{"step too short", "/api/v1/series?metric=rss&step=10ms&target=" + target, 400, `step="10ms": want a duration of a second or more`},
		{"bad kind", "/api/v1/runs?kind=runs", 400, `kind="runs"`},
		{"bad severity", "/api/v1/findings?severity=critical", 400, `severity="critical"`},
		{"too many points", "/api/v1/series?metric=rss&from=2026-01-01T00:00:00Z&to=2026-12-31T00:00:00Z&target=" + target, 422, "more than 1"},
		{"unknown route", "/api/v1/merge2", 404, "no route GET /api/v1/merge2"},
		{"diff without its base", "/api/v1/diff?from=2026-11-27T00:00:00Z&to=2026-11-28T00:00:00Z&target=" + target, 400, "give base_from"},
		{"diff of a range without runs", "/api/v1/diff?base_from=2020-01-01T00:00:00Z&base_to=2020-01-02T00:00:00Z&from=2020-01-03T00:00:00Z&to=2020-01-04T00:00:00Z&target=" + target, 404, "no run of"},
		{"profile without run", "/api/v1/profile?profile=x", 400, "give run"},
		{"run not in the store", "/api/v1/profile?run=runs/x/y&profile=profiles/heap-000.pb.gz", 404, "no such run"},
		// Path traversal, every way the two parameters could be bent.
		{"run up the tree", "/api/v1/profile?run=..%2F..%2F..%2Fetc&profile=passwd", 404, "no such run"},
		{"run absolute", "/api/v1/profile?run=%2Fetc&profile=passwd", 404, "no such run"},
		{"profile up the tree", "/api/v1/profile?run=" + run + "&profile=..%2F..%2F..%2F..%2Fetc%2Fpasswd", 404, "has no profile"},
		{"profile absolute", "/api/v1/profile?run=" + run + "&profile=%2Fetc%2Fpasswd", 404, "has no profile"},
		{"profile not listed", "/api/v1/profile?run=" + run + "&profile=entry.json", 404, "has no profile"},
		{"profile dot segments", "/api/v1/profile?run=" + run + "&profile=profiles%2F..%2Fentry.json", 404, "has no profile"},
		{"profile NUL", "/api/v1/profile?run=" + run + "&profile=profiles%2Fheap%00", 404, "has no profile"},
	}
	r := httptest.NewRequest(http.MethodDelete, "/api/v1/targets", nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, r)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("DELETE /api/v1/targets: %d, Allow %q: want 405 and GET, HEAD", rec.Code, rec.Header().Get("Allow"))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e struct{ Error string }
			decode(t, s, tt.target, tt.status, &e)
			if !strings.Contains(e.Error, tt.want) || strings.Contains(e.Error, "\n") {
				t.Errorf("error %q, want one line with %q", e.Error, tt.want)
			}
		})
	}
}

// TestAPI_mergeIsProfileMerge merges the heap profiles of the two runs
// through the API and checks the result against pprof's own merge of
// each run's last heap snapshot.
func TestAPI_mergeIsProfileMerge(t *testing.T) {
	f := filledStore(t)
	s := newServer(t, server.Options{})
	var want []*profile.Profile
	for _, e := range f.runs {
		res, err := rundir.Read(f.st.Dir() + "/" + e.Path)
		if err != nil {
			t.Fatal(err)
		}
		last := ""
		for _, p := range res.Profiles {
			if p.Kind == "heap" {
				last = p.Path
			}
		}
		data, err := os.ReadFile(f.st.Dir() + "/" + e.Path + "/" + last)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.ParseData(data)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
	}
	wantMerged, err := profile.Merge(want)
	if err != nil {
		t.Fatal(err)
	}
	q := "/api/v1/merge?type=heap&target=" + url.QueryEscape(f.target) +
		"&from=" + url.QueryEscape(f.runs[1].Time.Add(-time.Minute).Format(time.RFC3339)) +
		"&to=" + url.QueryEscape(f.runs[0].Time.Add(time.Minute).Format(time.RFC3339))
	resp := get(t, s, q)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("X-Heapscope-Profiles") != "2" {
		t.Fatalf("merge: %d, %s profiles: %.200s", resp.StatusCode, resp.Header.Get("X-Heapscope-Profiles"), body)
	}
	got, err := profile.ParseData(body)
	if err != nil {
		t.Fatalf("the merge is not a profile: %v", err)
	}
	total := func(p *profile.Profile, i int) (n int64) {
		for _, s := range p.Sample {
			n += s.Value[i]
		}
		return n
	}
	for i, st := range wantMerged.SampleType {
		if g, w := total(got, i), total(wantMerged, i); g != w {
			t.Errorf("%s: merged total %d, pprof's merge %d", st.Type, g, w)
		}
	}
	if len(got.Sample) != len(wantMerged.Sample) {
		t.Errorf("%d samples merged, pprof's merge has %d", len(got.Sample), len(wantMerged.Sample))
	}

	// Folded stacks add up to the same total.
	resp = get(t, s, q+"&format=folded&sample=inuse_space")
	folded, _ := io.ReadAll(resp.Body)
	var sum int64
	for _, line := range strings.Split(strings.TrimSpace(string(folded)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q", line)
		}
		sum += n
	}
	if want := total(wantMerged, 3); sum != want {
		t.Errorf("folded inuse_space sums to %d, want %d", sum, want)
	}

	// The same range by label (every target labelled group=cli: the one)
	// is the same merge.
	byLabel := get(t, s, strings.Replace(q, "target="+url.QueryEscape(f.target), "label=group%3Dcli", 1))
	byLabelBody, _ := io.ReadAll(byLabel.Body)
	if byLabel.StatusCode != 200 || !bytes.Equal(byLabelBody, body) {
		t.Errorf("merge by label: %d, %d bytes; want the target's merge, %d bytes", byLabel.StatusCode, len(byLabelBody), len(body))
	}

	// The flame graph page of the range draws the merge, and says it is
	// the sum of two heap snapshots; its link shows their mean, which
	// links back.
	flameURL := strings.Replace(q, "/api/v1/merge", "/flame", 1)
	status, page := pageOf(t, s, flameURL)
	if status != 200 || !strings.Contains(page, `class="hsflame"`) || !strings.Contains(page, "the sum of 2 heap snapshots, one per run") {
		t.Errorf("flame page: %d %.400s", status, page)
	}
	m := regexp.MustCompile(`<a href="([^"]+)">Show their mean</a>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("flame page offers no mean: %.600s", page)
	}
	status, page = pageOf(t, s, html.UnescapeString(m[1]))
	if status != 200 || !strings.Contains(page, "the mean of 2 heap snapshots, one per run") || !strings.Contains(page, "Show their sum</a>") {
		t.Errorf("mean flame page: %d %.600s", status, page)
	}
	if status, page := pageOf(t, s, flameURL+"&mean=half"); status != 400 || !strings.Contains(page, `mean="half"`) {
		t.Errorf("mean=half: %d %s", status, page)
	}

	// pprof's own UI of the merge.
	resp = get(t, s, strings.Replace(q, "/api/v1/merge", "/merged", 1))
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/merged/") {
		t.Fatalf("/merged: %d to %q, want a redirect to the merge's pprof UI", resp.StatusCode, loc)
	}
	if status, page := pageOf(t, s, loc+"flamegraph"); status != 200 || !strings.Contains(page, "stack-chart") {
		t.Errorf("pprof's flame graph of the merge: %d %.200s", status, page)
	}
	if status, _ := pageOf(t, s, "/merged/0123456789abcdef/pprof/x/"); status != 404 {
		t.Errorf("a merge not kept: %d, want 404", status)
	}

	// Bounds.
	for _, tt := range []struct {
		limits server.Limits
		query  string
		status int
		want   string
	}{
		{server.Limits{MaxRangeRuns: 1}, q, 422, "more than 1 runs"},
		{server.Limits{MaxMergeBytes: 1}, q, 422, "take more than 0 MiB stored"},
		{server.Limits{}, strings.Replace(q, "type=heap", "type=memory", 1), 400, `type="memory": want heap, allocs`},
		{server.Limits{}, strings.Replace(q, "target=", "tar=", 1), 400, "give target, or label=name=value"},
		{server.Limits{}, q + "&format=svg", 400, `format="svg"`},
		{server.Limits{}, q + "&format=folded&sample=bytes", 400, `sample="bytes"`},
	} {
		var e struct{ Error string }
		decode(t, newServer(t, server.Options{Limits: tt.limits}), tt.query, tt.status, &e)
		if !strings.Contains(e.Error, tt.want) {
			t.Errorf("%s with %+v: error %q, want %q", tt.query, tt.limits, e.Error, tt.want)
		}
	}
}

// pageOf GETs a page and returns its status and body.
func pageOf(t *testing.T, s *server.Server, target string) (int, string) {
	t.Helper()
	resp := get(t, s, target)
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestAPI_diffFoldedIsTheTwoMerges checks the differential folded stacks
// against the two ranges' merges: each column sums to its range's
// allocations.
func TestAPI_diffFoldedIsTheTwoMerges(t *testing.T) {
	f := filledStore(t)
	s := newServer(t, server.Options{})
	target := url.QueryEscape(f.target)
	base := [2]string{f.runs[1].Time.Add(-time.Minute).Format(time.RFC3339Nano), f.runs[0].Time.Format(time.RFC3339Nano)}
	after := [2]string{f.runs[0].Time.Format(time.RFC3339Nano), f.runs[0].Time.Add(time.Minute).Format(time.RFC3339Nano)}
	sum := func(body string, col int) (n int64) {
		for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
			if line == "" {
				continue
			}
			fields := strings.Fields(line)
			v, err := strconv.ParseInt(fields[len(fields)-col], 10, 64)
			if err != nil {
				t.Fatalf("line %q", line)
			}
			n += v
		}
		return n
	}
	_, diff := pageOf(t, s, "/api/v1/diff?format=folded&target="+target+"&base_from="+url.QueryEscape(base[0])+"&base_to="+url.QueryEscape(base[1])+
		"&from="+url.QueryEscape(after[0])+"&to="+url.QueryEscape(after[1]))
	for i, rng := range [][2]string{base, after} {
		status, merged := pageOf(t, s, "/api/v1/merge?type=allocs&format=folded&sample=alloc_space&target="+target+
			"&from="+url.QueryEscape(rng[0])+"&to="+url.QueryEscape(rng[1]))
		if status != 200 {
			t.Fatalf("merge of range %d: %d %s", i, status, merged)
		}
		if got, want := sum(diff, 2-i), sum(merged, 1); got != want {
			t.Errorf("range %d: the diff's column sums to %d, its merge to %d", i, got, want)
		}
	}
}
