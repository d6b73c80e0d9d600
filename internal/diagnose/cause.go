package diagnose

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// userLines is check 11: a leak or goroutine finding that points into a
// library, the standard library or the runtime is given the service's
// own line that causes it — the innermost frame of the service's code on
// the stacks, in any profile of the input, that pass through one of its
// misuse's calls (sql.Open, not the query on the database it opened),
// else through the finding's site or the misuse's signature. Goroutines
// parked in net/http's connection loops carry no frame of the service,
// but the requests the service made through http.Get do, in the heap
// profile: that is the line to edit. The finding keeps its title, which
// names where the bytes or goroutines are, and moves to the user's line;
// when no profile has such a frame it says so.
func (d *diagnosis) userLines() {
	misuses, _ := misuseCatalogue() // misuses() already noted a bad catalogue
	for i := range d.findings {
		f := &d.findings[i]
		m, misuse := misuseByID(misuses, f.Cause)
		// Growth no sample places has no site, but a misuse that explains
		// it names the calls that make it (keptByCalls).
		if d.folded[i] || !isSymptom(f.ID) || f.Function == "" && !misuse || d.app.own(frame{f.Function, f.File, f.Line}) {
			continue
		}
		var through []string
		if f.Function != "" {
			through = []string{f.Function}
		}
		var at site
		var ok bool
		if misuse {
			// The line that makes one of the misuse's calls, first; else
			// the line that reaches what grows.
			if at, ok = d.userFrameThrough(m.Calls, true); !ok {
				through = slices.Concat(through, m.Goroutines, m.Memory, m.Calls)
			}
		}
		if !ok {
			at, ok = d.userFrameThrough(through, false)
		}
		switch {
		case !ok && misuse:
			f.Fix += fmt.Sprintf(" (no profile holds a frame of the service's code on these stacks: look for its calls of %s)", functionList(m.Calls))
			continue
		case !ok:
			continue
		}
		keeps := ""
		if into, code, ok := d.keptBelow(at); ok {
			// What the line makes, the next ones keep in a map: the
			// map is what to bound, its insert the line to change.
			keeps = fmt.Sprintf(" (it keeps what line %d makes in a map: %s)", at.line, code)
			at = into
		}
		switch {
		case misuse:
			// The misuse and the user's line lead; the symptom follows.
			f.Title = fmt.Sprintf("%s at %s%s: %s", m.Name, at.where(), keeps, strings.TrimSuffix(f.Title, " — "+m.Name))
		default:
			f.Title += ", reached from " + at.where() + keeps
		}
		// An upgrade or a move off a module is not made at the line.
		if !strings.Contains(f.Fix, at.where()) && !explainedByKnownBug(*f) {
			f.Fix = "In " + at.where() + ": " + f.Fix
		}
		f.Function, f.File, f.Line = at.function, at.file, at.line
	}
}

// functionList names a few functions, short, for a sentence.
func functionList(functions []string) string {
	if len(functions) == 0 {
		return "the library"
	}
	short := make([]string, 0, 3)
	for _, fn := range functions[:min(3, len(functions))] {
		short = append(short, humanize.ShortFunction(fn))
	}
	return strings.Join(short, ", ")
}

// isSymptom says whether a finding's id is one whose site is where
// memory or goroutines pile up, not the line that makes them.
func isSymptom(id string) bool {
	return strings.HasPrefix(id, "leak.") || id == "goroutine.pile-up"
}

func misuseByID(list []Misuse, id string) (Misuse, bool) {
	i := slices.IndexFunc(list, func(m Misuse) bool { return m.ID == id })
	if i < 0 {
		return Misuse{}, false
	}
	return list[i], true
}

// userFrameThrough finds the service's line behind a set of library
// functions: in the last heap snapshot (in-use bytes), the last goroutine
// profile and, unless heldOnly, the window's allocations and the CPU
// profile, every sample whose stack holds one of the functions votes, by
// its share of its profile, for the innermost frame of the service's code
// outward of it (its caller) — or, when no frame of the service calls
// into the library on that stack (a goroutine the library or a go
// statement started), for the outermost frame of the service's code the
// library calls back (the function given to singleflight's Do). The line
// with the most votes wins. heldOnly keeps the votes to what is held, not
// what passed through: a healthy caller that allocates much does not
// outvote the one that leaks.
func (d *diagnosis) userFrameThrough(functions []string, heldOnly bool) (site, bool) {
	votes := map[site]float64{}
	vote := func(p *profile.Profile, sampleType string) {
		if p == nil {
			return
		}
		i := index(p, sampleType)
		if i < 0 {
			i = len(p.SampleType) - 1
		}
		var total float64
		for _, s := range p.Sample {
			total += float64(s.Value[i])
		}
		if total <= 0 {
			return
		}
		for _, s := range p.Sample {
			if s.Value[i] <= 0 {
				continue
			}
			fs := frames(s)
			k := slices.IndexFunc(fs, func(f frame) bool { return inSignature(functions, f.function) })
			if k < 0 {
				continue
			}
			if at, ok := d.app.firstApp(fs[k:]); ok {
				votes[at.site()] += float64(s.Value[i]) / total
			} else if at, ok := d.app.lastApp(fs[:k]); ok {
				votes[at.site()] += float64(s.Value[i]) / total
			}
		}
	}
	if len(d.in.Heap) > 0 {
		vote(d.in.Heap[len(d.in.Heap)-1].Profile, pprofx.InuseSpace)
	}
	if len(d.in.Goroutines) > 0 {
		vote(d.in.Goroutines[len(d.in.Goroutines)-1].Profile, "goroutine")
	}
	if !heldOnly {
		vote(d.allocs, pprofx.AllocSpace)
		vote(d.in.CPU, "cpu")
	}
	var best site
	bestVotes := 0.0
	for at, v := range votes {
		if v > bestVotes || v == bestVotes && at.where() < best.where() {
			best, bestVotes = at, v
		}
	}
	return best, bestVotes > 0
}

// oneFindingPerUserLine folds the leak and goroutine findings that share
// a cause — the same misuse of a library (or none) reached from the same
// line of the service — into the most severe of them, which lists the
// others as its symptoms and takes the worst severity: the goroutines,
// buffers and connections of one http.Get whose bodies stay open are one
// thing to fix, not four. An allocation hot spot at such a line is one of
// its symptoms too, and so is a leak without a misuse that a few samples
// place in the function of a misuse's finding (weaklyPlaced).
func oneFindingPerUserLine(findings []result.Finding, app appCode) []result.Finding {
	type cause struct {
		misuse string
		at     site
	}
	lead := map[cause]int{}
	// leadAt is the finding each leak's line went to: its own, or the
	// one it was folded into.
	leadAt := map[site]int{}
	folded := make([]bool, len(findings))
	order := make([]int, len(findings))
	for i := range order {
		order[i] = i
	}
	// The most severe first, so it leads; the goroutine findings after
	// the memory ones at equal severity (the memory is what is held).
	slices.SortStableFunc(order, func(a, b int) int {
		fa, fb := findings[a], findings[b]
		if c := SeverityOf(fb) - SeverityOf(fa); c != 0 {
			return int(c)
		}
		return b2i(goroutineKind(fa.ID)) - b2i(goroutineKind(fb.ID))
	})
	for _, i := range order {
		f := findings[i]
		if !isSymptom(f.ID) || f.Severity == "info" || f.Function == "" || !app.is(f.Function) {
			continue
		}
		at := site{f.Function, f.File, f.Line}
		k := cause{f.Cause, at}
		if f.Cause != "" {
			// One misuse in one function is one thing to fix, whichever
			// of its lines the symptoms were reached from (a sql.Open
			// and the query on the database it opened).
			k.at.line = 0
		}
		j, ok := lead[k]
		if !ok {
			lead[k] = i
			j = i
		} else {
			folded[i] = true
			l := &findings[j]
			l.Symptoms = append(l.Symptoms, result.Symptom{ID: f.ID, Severity: f.Severity, Title: f.Title,
				Function: f.Function, File: f.File, Line: f.Line})
			l.Symptoms = append(l.Symptoms, f.Symptoms...)
			l.Confidence = max(l.Confidence, f.Confidence)
		}
		if _, seen := leadAt[at]; !seen {
			leadAt[at] = j
		}
	}
	// A leak without a misuse that a few samples place in the function
	// where a misuse was found (or a closure of it, or its parent) is most
	// likely that misuse's memory: the channel a blocked sender holds, made
	// on the line before the go statement.
	for i, f := range findings {
		if folded[i] || !weaklyPlaced(f) || !app.is(f.Function) {
			continue
		}
		j := slices.IndexFunc(findings, func(m result.Finding) bool {
			return m.Cause != "" && isSymptom(m.ID) && m.File == f.File && sameFunctionOrClosure(m.Function, f.Function)
		})
		if j >= 0 && folded[j] {
			// A folded misuse finding went to the lead of its line.
			l, ok := leadAt[site{findings[j].Function, findings[j].File, findings[j].Line}]
			j = -1
			if ok && !folded[l] {
				j = l
			}
		}
		if j < 0 {
			continue
		}
		folded[i] = true
		l := &findings[j]
		l.Symptoms = append(l.Symptoms, result.Symptom{ID: f.ID, Severity: f.Severity, Title: f.Title,
			Function: f.Function, File: f.File, Line: f.Line})
		if SeverityOf(f) > SeverityOf(*l) {
			l.Severity = f.Severity
		}
	}
	// An allocation hot spot at a leak's line is the leak's allocations
	// seen in the allocs profile: a symptom too.
	for i, f := range findings {
		j, ok := leadAt[site{f.Function, f.File, f.Line}]
		if f.ID != "alloc.hot-spot" || !ok {
			continue
		}
		folded[i] = true
		l := &findings[j]
		l.Symptoms = append(l.Symptoms, result.Symptom{ID: f.ID, Severity: f.Severity, Title: f.Title,
			Function: f.Function, File: f.File, Line: f.Line})
	}
	out := findings[:0]
	for i, f := range findings {
		if folded[i] {
			continue
		}
		if n := len(f.Symptoms); n > 0 {
			f.Title += fmt.Sprintf("; with it %d more symptom%s of the same cause", n, plural(n))
			if f.Evidence == nil {
				f.Evidence = map[string]float64{}
			}
			f.Evidence["symptoms"] = float64(n)
		}
		out = append(out, f)
	}
	return out
}

func goroutineKind(id string) bool {
	return id == "leak.goroutine-growth" || id == "goroutine.pile-up"
}

// WithKnown leads findings with the causes a target's history holds open
// (known, as earlier captures found them, each with its cause key): a
// finding of this input with the cause of a known one becomes its symptom
// (this window's evidence), and the known one takes the worse severity;
// a known cause this input does not show is listed all the same, first
// by its severity. A trigger's bundle, a few seconds of a service under
// pressure, so names the cause the scheduled runs found rather than the
// symptom the short window shows.
func WithKnown(findings, known []result.Finding) []result.Finding {
	if len(known) == 0 {
		return findings
	}
	out := make([]result.Finding, 0, len(known)+len(findings))
	byCause := map[string]int{}
	for _, k := range known {
		if _, dup := byCause[k.Cause]; dup || k.Cause == "" {
			continue
		}
		byCause[k.Cause] = len(out)
		out = append(out, k)
	}
	for _, f := range findings {
		i, ok := byCause[f.Cause]
		if !ok {
			out = append(out, f)
			continue
		}
		k := &out[i]
		k.Symptoms = append(k.Symptoms, result.Symptom{ID: f.ID, Severity: f.Severity, Title: "in this window: " + f.Title,
			Function: f.Function, File: f.File, Line: f.Line})
		if SeverityOf(f) > SeverityOf(*k) {
			k.Severity = f.Severity
		}
	}
	Sort(out)
	return out
}

// weaklyPlaced reports whether f is a growing site that fewer than
// MinPlacingSamples samples place, with no holder named for it: a finding
// whose place is a guess.
func weaklyPlaced(f result.Finding) bool {
	n, placed := f.Evidence["site_samples"]
	_, held := f.Evidence["held_sites"]
	return f.ID == "leak.inuse-growth" && f.Cause == "" && placed && n > 0 && n < MinPlacingSamples && !held
}

// sameFunctionOrClosure reports whether a and b are one function, or one is
// a closure (at any depth) of the other: main.handle and main.handle.func1.
func sameFunctionOrClosure(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
}

// keptWithin is how many lines after a call keptBelow looks for the map
// insert that keeps its result.
const keptWithin = 3

// assignedRE matches a line that assigns a call's result to a variable
// (l = rate.NewLimiter(10, 20), c, err := newCache()), capturing the
// variable.
var assignedRE = regexp.MustCompile(`^\s*(\w+)(?:\s*,\s*\w+)*\s*:?=\s*[\w.]+(?:\[[^\]]*\])?\(`)

// keptBelow finds where what the line at makes is kept: at assigns a
// call's result to a variable, and one of the next keptWithin lines
// inserts that variable into a map (m[k] = l). It returns the insert's
// site and code. Without the service's source, or with no such insert,
// it returns false.
func (d *diagnosis) keptBelow(at site) (site, string, bool) {
	src, ok := d.sourceLine(at)
	if !ok {
		return site{}, "", false
	}
	m := assignedRE.FindStringSubmatch(src)
	if m == nil {
		return site{}, "", false
	}
	insert := regexp.MustCompile(`[\w.)]\[[^\]]+\]\s*=\s*` + regexp.QuoteMeta(m[1]) + `\s*$`)
	for n := int64(1); n <= keptWithin; n++ {
		next := site{at.function, at.file, at.line + n}
		line, ok := d.sourceLine(next)
		if !ok {
			break
		}
		code, _, _ := strings.Cut(line, "//")
		if code = strings.TrimSpace(code); insert.MatchString(code) {
			return next, code, true
		}
	}
	return site{}, "", false
}
