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
func Top(p *profile.Profile, opts TopOptions) (Table, error) {
	if p == nil {
		return Table{}, errors.New("top: nil profile")
	}
	idx, err := SampleIndex(p, opts.Sample)
	if err != nil {
		return Table{}, err
	}
	t := newTopper(p)
	var total int64
	for i, s := range p.Sample {
		if idx >= len(s.Value) {
			return Table{}, fmt.Errorf("top: sample %d has %d values, want %d", i, len(s.Value), len(p.SampleType))
		}
		v := s.Value[idx]
		total += v
		if v != 0 {
			t.add(s, v, int32(i+1))
		}
	}

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
	st := p.SampleType[idx]
	return Table{SampleType: st.Type, Unit: st.Unit, Total: total, Sites: slices.Clip(sites)}, nil
}

// siteKey identifies a site.
type siteKey struct {
	function, file string
	line           int64
}

// topper aggregates samples into sites. Every location gets a slot the
// first time a sample reaches it; a slot lists the sites of the
// location's lines, innermost first, so the per-sample work is slice
// indexing with no map lookups and no allocation.
type topper struct {
	sites   []Site
	siteIdx map[siteKey]int32
	// seen[site] is the stamp of the last sample counted in the site's
	// Cum, so a recursive stack counts once.
	seen []int32

	slots []slot
	// lineSites holds each slot's site indices, innermost line first.
	lineSites []int32
	// byID maps dense location IDs to slot+1; other locations go through
	// byPtr.
	byID  []int32
	byPtr map[*profile.Location]int32
}

type slot struct {
	loc        *profile.Location
	start, end int32 // range in lineSites
	leafFlat   int64 // flat value taken as a sample's leaf
}

func newTopper(p *profile.Profile) *topper {
	t := &topper{
		siteIdx:   make(map[siteKey]int32, len(p.Location)),
		slots:     make([]slot, 0, len(p.Location)),
		lineSites: make([]int32, 0, len(p.Location)+len(p.Location)/4),
		sites:     make([]Site, 0, len(p.Location)),
		seen:      make([]int32, 0, len(p.Location)),
		byPtr:     map[*profile.Location]int32{},
	}
	var maxID uint64
	for _, l := range p.Location {
		maxID = max(maxID, l.ID)
	}
	if maxID <= 4*uint64(len(p.Location))+64 {
		t.byID = make([]int32, maxID+1)
	}
	return t
}

// add counts sample s, whose value is v, stamped stamp (unique and
// non-zero per sample).
func (t *topper) add(s *profile.Sample, v int64, stamp int32) {
	if len(s.Location) == 0 {
		i := t.site(siteKey{function: NoStack})
		t.sites[i].Flat += v
		t.sites[i].Cum += v
		return
	}
	for j, l := range s.Location {
		sl := t.slotOf(l)
		lines := t.lineSites[t.slots[sl].start:t.slots[sl].end]
		if j == 0 {
			t.sites[lines[0]].Flat += v
			t.slots[sl].leafFlat += v
		}
		for _, si := range lines {
			if t.seen[si] != stamp {
				t.seen[si] = stamp
				t.sites[si].Cum += v
			}
		}
	}
}

// slotOf returns the slot of l, creating it on first sight.
func (t *topper) slotOf(l *profile.Location) int32 {
	if l.ID < uint64(len(t.byID)) {
		if s := t.byID[l.ID]; s != 0 && t.slots[s-1].loc == l {
			return s - 1
		}
	}
	if s, ok := t.byPtr[l]; ok {
		return s
	}
	s := int32(len(t.slots))
	start := int32(len(t.lineSites))
	if len(l.Line) == 0 {
		t.lineSites = append(t.lineSites, t.site(siteKey{function: addressName(l.Address)}))
	}
	for _, ln := range l.Line {
		k := siteKey{line: ln.Line}
		if f := ln.Function; f != nil {
			k.function, k.file = f.Name, f.Filename
		} else {
			k.function = addressName(l.Address)
		}
		t.lineSites = append(t.lineSites, t.site(k))
	}
	t.slots = append(t.slots, slot{loc: l, start: start, end: int32(len(t.lineSites))})
	if l.ID < uint64(len(t.byID)) && t.byID[l.ID] == 0 {
		t.byID[l.ID] = s + 1
	} else {
		t.byPtr[l] = s
	}
	return s
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
	for i, sl := range t.slots {
		if len(sl.loc.Line) < 2 || sl.leafFlat == 0 {
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
		lines := t.slots[b.slot].loc.Line
		chain := make([]string, len(lines))
		for i, ln := range lines {
			if ln.Function != nil {
				chain[i] = ln.Function.Name
			} else {
				chain[i] = addressName(t.slots[b.slot].loc.Address)
			}
		}
		t.sites[site].Inlined = chain
	}
}

func addressName(addr uint64) string {
	return fmt.Sprintf("0x%x", addr)
}
