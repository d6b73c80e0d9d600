package diagnose

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// Name the holder. When a leak's growth spreads over several stacks, the
// sites where the retained objects were allocated are symptoms: a map
// keyed by a query value keeps the request line net/http read, a slice of
// requests keeps their headers. What the user can change is the container
// that holds them, and it has a signature of its own: its growth comes in
// few, large objects (a map's tables, a slice's backing array), at a line
// of the service's own code that inserts into a map or appends to a
// slice. The holder's finding leads; the sites whose objects grow with it
// are listed under it rather than reported one by one.

// containerObjectBytes is the least object size counted as a container's
// storage: a map's table or a slice's backing array past its first
// doublings. Retained request data (strings, small structs) is smaller.
const containerObjectBytes = 1 << 10

// holder is the growing site found to hold the rest of the growth.
type holder struct {
	p place
	// what names the container ("a map", "a slice"), how says what showed
	// it (the line, a mapassign frame).
	what, how string
	// sure scales the finding's confidence: 1 when the line shows it.
	sure float64
	// storage is the growth in objects of containerObjectBytes or more.
	storage float64
	// held are the other growing sites, whose objects grow with it.
	held []place
}

// findHolder looks among the growing places for the container that holds
// them. It needs a line of the service's own code that inserts into a map
// or appends to a slice — growing in large objects, or the one such line
// that allocated over the window — and growth at another site.
func (d *diagnosis) findHolder(places []place, hs heapSites, from int) (holder, bool) {
	// A container's storage is few large objects, which the samples
	// catch more surely than the small ones around them: a site of the
	// service's code whose large objects grew is a candidate even when
	// its sampled total did not rise.
	inPlaces := map[site]bool{}
	for _, p := range places {
		inPlaces[p.s.at] = true
	}
	var extra []place
	for at, large := range hs.large {
		s := hs.sites[at]
		if inPlaces[at] || s == nil || !d.app.is(at.function) {
			continue
		}
		if g := large[len(large)-1] - large[from]; g > 0 {
			n := 0.0
			if cnt := hs.samples[at]; cnt != nil {
				n = max(cnt[len(cnt)-1]-cnt[from], 0)
			}
			extra = append(extra, place{s: s, n: n, growth: g, plusMin: g / math.Sqrt(max(n, 1))})
		}
	}
	slices.SortFunc(extra, func(a, b place) int { return cmp.Compare(a.s.at.where(), b.s.at.where()) })
	places = append(slices.Clip(places), extra...)
	best, weak := -1, -1
	var h, w holder
	for i, p := range places {
		at := p.s.at
		if !d.app.is(at.function) {
			continue
		}
		storage := 0.0
		if large := hs.large[at]; large != nil {
			storage = large[len(large)-1] - large[from]
		}
		if storage <= 0 && p.growth <= 0 {
			continue
		}
		what, how, sure, ok := d.containerAt(at)
		if !ok {
			continue
		}
		switch {
		case storage > 0 && (best < 0 || p.growth > places[best].growth):
			best = i
			h = holder{p: p, what: what, how: how, sure: sure, storage: storage}
		case storage <= 0 && (weak < 0 || p.growth > places[weak].growth):
			weak = i
			w = holder{p: p, what: what, how: how, sure: sure * weakHolder}
		}
	}
	if best < 0 && weak < 0 {
		// No sample of the heap caught the service's container at all:
		// its line may still be the one container of the service's code
		// that allocated over the window. What it keeps may then be one
		// growing site alone (the request lines its keys are cut from).
		if p, what, how, sure, ok := d.allocatingContainer(inPlaces); ok {
			places = append(places, p)
			weak = len(places) - 1
			w = holder{p: p, what: what, how: how, sure: sure * weakHolder * weakHolder}
		}
	}
	if len(places) < 2 {
		return holder{}, false // a holder and something it holds
	}
	if best < 0 && weak >= 0 && d.keptByOne(places, weak, hs) {
		// No sample caught the container's own storage, but the rest of
		// the growth is what a container keeps, and this is the one
		// growing container of the service's code: the place to look.
		best, h = weak, w
	}
	if best < 0 {
		return holder{}, false
	}
	for i, p := range places {
		if i == best {
			continue
		}
		if large := hs.large[p.s.at]; large != nil && large[len(large)-1]-large[from] > 0 && d.app.is(p.s.at.function) {
			// Another container of the service's: a leak of its own.
			continue
		}
		h.held = append(h.held, p)
	}
	return h, len(h.held) > 0
}

// allocatingContainer returns the one line of the service's own code
// (dependencies left out) that inserts into a map or appends to a slice
// among the window's allocation sites, outside the growing places: a
// holder candidate when no heap sample caught one. Two or more such lines,
// or none, give nothing.
func (d *diagnosis) allocatingContainer(inPlaces map[site]bool) (p place, what, how string, sure float64, ok bool) {
	found := 0
	for _, a := range d.appSites() {
		if inPlaces[a.at] || inDependency(a.at.file) {
			continue
		}
		w, h, s, isContainer := d.containerAt(a.at)
		if !isContainer {
			continue
		}
		found++
		p, what, how, sure = place{s: &series{at: a.at}}, w, h, s
	}
	return p, what, how, sure, found == 1
}

// resetAppend matches an append to a slice cut to length zero.
var resetAppend = regexp.MustCompile(`append\(\s*[\w.]+\[:0\]`)

// weakHolder scales the confidence of a holder found without samples of
// its own storage.
const weakHolder = 0.7

// keptByOne reports whether places[at], a growing container of the
// service's code, is the one thing that can be keeping the rest of the
// growth: every other growing place is memory a library allocated on its
// own, with no frame of the service's code in its stacks (the request
// net/http reads), which only something of the service's can keep, or
// objects the service's own code allocated outside any container. A
// library's allocation for the service's call may be kept by the library
// itself (a known leak of a dependency), and a second container of the
// service's code would be as likely a holder: either leaves it open.
// Beside a container the samples place (MinPlacingSamples or more), a
// place of fewer is chance, as the leak check says: it neither keeps the
// choice open nor is kept.
func (d *diagnosis) keptByOne(places []place, at int, hs heapSites) bool {
	kept := false
	placed := places[at].n >= MinPlacingSamples
	for i, p := range places {
		if i == at || placed && p.n < MinPlacingSamples {
			continue
		}
		if d.app.is(p.s.at.function) && !inDependency(p.s.at.file) {
			if _, _, _, ok := d.containerAt(p.s.at); ok {
				return false
			}
		} else if _, ok := d.appCaller(hs, p.s.at); ok {
			return false
		}
		kept = true
	}
	return kept
}

// inDependency reports whether a source path is a dependency's: in the
// module cache, or a module@version path as -trimpath writes them. Without
// the build info, a dependency's functions pass for the service's own.
func inDependency(file string) bool {
	if _, _, ok := ModuleOfFile(file); ok {
		return true
	}
	at := strings.Index(file, "@v")
	return at > 0 && at+2 < len(file) && file[at+2] >= '0' && file[at+2] <= '9'
}

// containerAt says whether the line at a site inserts into a map or
// appends to a slice: from its source, or from a runtime.mapassign or
// growslice frame under it in the CPU profile.
func (d *diagnosis) containerAt(at site) (what, how string, sure float64, ok bool) {
	if how, _, sure, ok := d.mapHolder(at); ok {
		return "a map", how, sure, true
	}
	if src, ok := d.sourceLine(at); ok && strings.Contains(src, "append(") {
		code, _, _ := strings.Cut(src, "//")
		if resetAppend.MatchString(code) {
			// append(b[:0], …) refills a buffer from its start: it
			// reuses, it does not accumulate.
			return "", "", 0, false
		}
		return "a slice", "the line appends to it: " + strings.TrimSpace(code), 1, true
	}
	if d.cpuUnder(at, "runtime.growslice") > 0 {
		return "a slice", "a runtime.growslice frame under the line in the CPU profile", 0.6, true
	}
	return "", "", 0, false
}

// holderFinding is the one finding of a leak whose growth a container
// holds: at the container's line, with the live heap's verdict, and the
// sites whose objects grow with it.
func (d *diagnosis) holderFinding(h holder, sev Severity, growsBy string, ev map[string]float64, period int64, conf float64) result.Finding {
	p := h.p
	ev = maps.Clone(ev)
	ev["site_growth_bytes"] = p.growth
	ev["site_growth_uncertainty_bytes"] = p.plusMin
	ev["site_samples"] = p.n
	ev["site_storage_growth_bytes"] = h.storage
	var heldBytes float64
	var parts []string
	foreign := false
	for i, q := range h.held {
		heldBytes += q.growth
		foreign = foreign || !d.app.is(q.s.at.function)
		if i < 4 {
			parts = append(parts, fmt.Sprintf("≈ %s at %s", humanize.Bytes(q.growth), q.s.at.where()))
		}
	}
	if len(h.held) > 4 {
		parts = append(parts, fmt.Sprintf("and %d more sites", len(h.held)-4))
	}
	ev["held_sites"] = float64(len(h.held))
	ev["held_growth_bytes"] = heldBytes

	fn := humanize.ShortFunction(p.s.at.function)
	storage := fmt.Sprintf("%s of it the %s's own storage (objects of %s or more)", humanize.Bytes(h.storage), strings.TrimPrefix(h.what, "a "), humanize.Bytes(containerObjectBytes))
	if h.storage <= 0 {
		storage = "the only growing container of your code"
	}
	there := fmt.Sprintf("≈ %s ± %s there (%s at %s), %s", humanize.Bytes(p.growth), humanize.Bytes(p.plusMin), samplesWord(p.n), humanize.Bytes(float64(period)), storage)
	if p.growth <= 0 && p.n <= 0 {
		there = fmt.Sprintf("no heap sample there yet (one per %s), the only line of your code that fills a container over the window", humanize.Bytes(float64(period)))
	}
	title := fmt.Sprintf("%s that only grows holds the leak (%s): at %s %s; %s; kept with it: %s",
		h.what, h.how, p.s.at.where(), growsBy, there, strings.Join(parts, ", "))

	fix := "bound the " + strings.TrimPrefix(h.what, "a ") + ": "
	if h.what == "a map" {
		fix = unboundedMapFix
	} else {
		fix += "cap its length, drop what is done with, or keep a ring of the last N entries; re-slicing does not free the backing array, so copy what you keep into a new slice"
	}
	if foreign {
		fix += fmt.Sprintf(". Part of what it keeps was allocated outside your code (%s): a string or slice cut from a larger one keeps all of it alive, so copy what you keep (strings.Clone, bytes.Clone); as it is, every call that reaches %s leaves that much behind",
			foreignSites(h.held, d.app), fn)
	}
	return newFinding("leak.inuse-growth", sev, p.s.at, title, ev, fix, conf*h.sure*(1-1/math.Sqrt(1+p.n+sumSamples(h.held))))
}

// outsideFix is the advice for growth at a site outside the service's
// code, aimed at what the user can change: the call of their code that
// feeds it, or, when no stack at the site runs through their code (what a
// library allocates on its own goroutine, like the request net/http
// reads), what their code must be keeping of it. It is empty for a site
// in the service's own code.
func (d *diagnosis) outsideFix(hs heapSites, at site) string {
	if d.app.is(at.function) {
		return ""
	}
	pkg := humanize.ShortFunction(at.function)
	if i := strings.IndexAny(pkg, ".("); i > 0 {
		pkg = pkg[:i]
	}
	if caller, ok := d.appCaller(hs, at); ok {
		return fmt.Sprintf("%s allocates this for your call at %s, and what it returned stays reachable: find where your code keeps the result (a map, a slice, a cache, a struct that outlives the call) and bound it, or keep only the part you need, copied (strings.Clone, bytes.Clone)",
			pkg, caller)
	}
	return fmt.Sprintf("no frame of your code allocates this: %s does, on its own, and something in your code keeps a reference to it — usually a string or slice cut from it (a map key or value taken from a request, a header, a parsed field), which keeps the whole allocation alive. Find the map, slice or cache your code adds such values to and bound it, and copy what you keep (strings.Clone, bytes.Clone)",
		pkg)
}

// appCaller returns the innermost frame of the service's code in the
// heaviest stack at a site, as "api.(*Server).get (api/api.go:17)".
func (d *diagnosis) appCaller(hs heapSites, at site) (string, bool) {
	var best *series
	for _, st := range hs.stacks {
		if st.at == at && (best == nil || st.ys[len(st.ys)-1] > best.ys[len(best.ys)-1] ||
			st.ys[len(st.ys)-1] == best.ys[len(best.ys)-1] && st.key() < best.key()) {
			best = st
		}
	}
	if best == nil {
		return "", false
	}
	for _, line := range strings.Split(best.key(), "\n") {
		fn, where, _ := strings.Cut(line, " ")
		if d.app.is(fn) {
			return fmt.Sprintf("%s (%s)", humanize.ShortFunction(fn), where), true
		}
	}
	return "", false
}

// foreignSites names the functions of the held sites outside the
// service's code: "textproto.(*Reader).ReadLine".
func foreignSites(held []place, app appCode) string {
	var names []string
	seen := map[string]bool{}
	for _, q := range held {
		fn := q.s.at.function
		if app.is(fn) || seen[fn] {
			continue
		}
		seen[fn] = true
		names = append(names, humanize.ShortFunction(fn))
		if len(names) == 3 {
			break
		}
	}
	return strings.Join(names, ", ")
}

func sumSamples(ps []place) float64 {
	var n float64
	for _, p := range ps {
		n += p.n
	}
	return n
}
