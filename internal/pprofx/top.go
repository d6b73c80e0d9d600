package pprofx

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/google/pprof/profile"
)

// TopOptions selects what Top ranks.
type TopOptions struct {
	// Sample is the sample type to rank by; empty means the profile's
	// default (see SampleIndex).
	Sample string
	// N caps the number of sites returned; N ≤ 0 returns all of them.
	N int
	// SortByCum ranks by cumulative instead of flat value.
	SortByCum bool
}

// Table is the top sites of a profile for one sample type.
type Table struct {
	SampleType string `json:"sample_type"`
	Unit       string `json:"unit"`
	// Total is the plain sum of the sample type's values over all samples.
	// Delta profiles can hold negative values; they count with their sign.
	Total int64  `json:"total"`
	Sites []Site `json:"sites"`
}

// Site is one source line of a profile (pprof's -lines granularity): a
// function, its file and a line in it, with its values.
type Site struct {
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int64  `json:"line"`
	// Flat sums the samples whose innermost frame is this line.
	Flat int64 `json:"flat"`
	// Cum sums the samples whose stack holds this line at least once.
	Cum int64 `json:"cum"`
	// FlatShare and CumShare are Flat and Cum divided by the table's
	// Total, or 0 when Total is 0.
	FlatShare float64 `json:"flat_share"`
	CumShare  float64 `json:"cum_share"`
	// Inlined is set when the line was inlined where it was sampled: the
	// chain of functions from this one (innermost) to the one it was
	// inlined into (outermost). When the line is the innermost frame of
	// several inline chains, the chain that carries the most flat value is
	// shown.
	Inlined []string `json:"inlined,omitempty"`
}

// Frame names used when a profile lacks symbols.
const (
	// NoStack is the Function of the site that collects samples without
	// any location.
	NoStack = "[no stack]"
)

// Top ranks the source lines of p by flat (or cumulative) value of one
// sample type. The order is deterministic: by the ranking value
// descending, then by function, file and line. Sites whose flat and
// cumulative values are both zero are left out.
//
// Top aggregates p with StacksOf and ranks with Stacks.Top, the code path
// of profiles read with ReadStacks.
func Top(p *profile.Profile, opts TopOptions) (Table, error) {
	if p == nil {
		return Table{}, errors.New("top: nil profile")
	}
	if _, err := SampleIndex(p, opts.Sample); err != nil {
		return Table{}, err
	}
	s, err := StacksOf(p)
	if err != nil {
		return Table{}, fmt.Errorf("top: %w", err)
	}
	return s.Top(opts)
}

// Top ranks the source lines of s by flat (or cumulative) value of one
// sample type, as the package-level Top does for a parsed profile.
func (s *Stacks) Top(opts TopOptions) (Table, error) {
	idx, err := s.SampleIndex(opts.Sample)
	if err != nil {
		return Table{}, err
	}
	t := newTopper(s)
	for i := range s.Len() {
		if v := s.Values(i)[idx]; v != 0 {
			t.add(s.Stack(i), v, int32(i+1))
		}
	}
	total := s.Total(idx)

	t.setInlined()
	sites := t.sites[:0]
	for _, s := range t.sites {
		if s.Flat != 0 || s.Cum != 0 {
			sites = append(sites, s)
		}
	}
	slices.SortFunc(sites, func(a, b Site) int {
		ka, kb := a.Flat, b.Flat
		if opts.SortByCum {
			ka, kb = a.Cum, b.Cum
		}
		if c := cmp.Compare(kb, ka); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Function, b.Function); c != 0 {
			return c
		}
		if c := cmp.Compare(a.File, b.File); c != 0 {
			return c
		}
		return cmp.Compare(a.Line, b.Line)
	})
	if opts.N > 0 && len(sites) > opts.N {
		sites = sites[:opts.N]
	}
	if total != 0 {
		for i := range sites {
			sites[i].FlatShare = float64(sites[i].Flat) / float64(total)
			sites[i].CumShare = float64(sites[i].Cum) / float64(total)
		}
	}
	st := s.SampleTypes[idx]
	return Table{SampleType: st.Type, Unit: st.Unit, Total: total, Sites: slices.Clip(sites)}, nil
}

// siteKey identifies a site.
type siteKey struct {
	function, file string
	line           int64
}

// topper aggregates stacks into sites. Every location gets a slot the
// first time a stack reaches it; a slot lists the sites of the location's
// lines, innermost first, so the per-frame work is slice indexing with no
// map lookups and no allocation.
type topper struct {
	s       *Stacks
	sites   []Site
	siteIdx map[siteKey]int32
	// seen[site] is the stamp of the last stack counted in the site's
	// Cum, so a recursive stack counts once.
	seen []int32

	// slots[loc] is the slot of location loc + 1, 0 before first sight.
	slots     []int32
	slotInfo  []slot
	lineSites []int32 // each slot's site indices, innermost line first
}

type slot struct {
	loc        int32
	start, end int32 // range in lineSites
	leafFlat   int64 // flat value taken as a stack's leaf
}

func newTopper(s *Stacks) *topper {
	n := len(s.Locations)
	return &topper{
		s:         s,
		siteIdx:   make(map[siteKey]int32, n),
		slots:     make([]int32, n),
		slotInfo:  make([]slot, 0, n),
		lineSites: make([]int32, 0, n+n/4),
		sites:     make([]Site, 0, n),
		seen:      make([]int32, 0, n),
	}
}

// add counts a stack whose value is v, stamped stamp (unique and non-zero
// per stack).
func (t *topper) add(stack []int32, v int64, stamp int32) {
	if len(stack) == 0 {
		i := t.site(siteKey{function: NoStack})
		t.sites[i].Flat += v
		t.sites[i].Cum += v
		return
	}
	for j, l := range stack {
		sl := t.slots[l] - 1
		if sl < 0 {
			sl = t.newSlot(l)
		}
		info := &t.slotInfo[sl]
		lines := t.lineSites[info.start:info.end]
		if j == 0 {
			t.sites[lines[0]].Flat += v
			info.leafFlat += v
		}
		for _, si := range lines {
			if t.seen[si] != stamp {
				t.seen[si] = stamp
				t.sites[si].Cum += v
			}
		}
	}
}

// newSlot creates the slot of location l.
func (t *topper) newSlot(l int32) int32 {
	sl := int32(len(t.slotInfo))
	start := int32(len(t.lineSites))
	loc := &t.s.Locations[l]
	if len(loc.Lines) == 0 {
		t.lineSites = append(t.lineSites, t.site(siteKey{function: addressName(loc.Address)}))
	}
	for i, ln := range loc.Lines {
		k := siteKey{line: ln.Line, function: t.s.FunctionName(l, i)}
		if ln.Function >= 0 {
			k.file = t.s.Functions[ln.Function].File
		}
		t.lineSites = append(t.lineSites, t.site(k))
	}
	t.slotInfo = append(t.slotInfo, slot{loc: l, start: start, end: int32(len(t.lineSites))})
	t.slots[l] = sl + 1
	return sl
}

// site returns the index of the site with key k, creating it on first
// sight.
func (t *topper) site(k siteKey) int32 {
	if i, ok := t.siteIdx[k]; ok {
		return i
	}
	i := int32(len(t.sites))
	t.siteIdx[k] = i
	t.sites = append(t.sites, Site{Function: k.function, File: k.file, Line: k.line})
	t.seen = append(t.seen, 0)
	return i
}

// setInlined fills Site.Inlined from the leaf locations that hold inline
// chains. It must run before t.sites is reordered.
func (t *topper) setInlined() {
	type best struct {
		slot int32
		flat int64
	}
	var chosen map[int32]best
	for i, sl := range t.slotInfo {
		if len(t.s.Locations[sl.loc].Lines) < 2 || sl.leafFlat == 0 {
			continue
		}
		site := t.lineSites[sl.start]
		if b, ok := chosen[site]; ok && b.flat >= sl.leafFlat {
			continue
		}
		if chosen == nil {
			chosen = map[int32]best{}
		}
		chosen[site] = best{slot: int32(i), flat: sl.leafFlat}
	}
	for site, b := range chosen {
		loc := t.slotInfo[b.slot].loc
		chain := make([]string, len(t.s.Locations[loc].Lines))
		for i := range chain {
			chain[i] = t.s.FunctionName(loc, i)
		}
		t.sites[site].Inlined = chain
	}
}

func addressName(addr uint64) string {
	return fmt.Sprintf("0x%x", addr)
}
