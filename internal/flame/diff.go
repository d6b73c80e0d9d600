package flame

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// DiffBy says what a differential flame graph colours: the change of a
// frame's value, or of its share of the total.
type DiffBy uint8

const (
	// ByAbsolute colours by the change of value: after an optimisation,
	// frames whose value did not change stay neutral even though their
	// share grew.
	ByAbsolute DiffBy = iota
	// ByShare colours by the change of share of the total.
	ByShare
)

// String returns "absolute" or "share".
func (d DiffBy) String() string {
	if d == ByShare {
		return "share"
	}
	return "absolute"
}

// ParseDiffBy reads "absolute" or "share".
func ParseDiffBy(s string) (DiffBy, error) {
	switch s {
	case "absolute", "":
		return ByAbsolute, nil
	case "share":
		return ByShare, nil
	}
	return 0, fmt.Errorf("diff by %q: want absolute or share", s)
}

// DiffOptions tune Diff and Vanished.
type DiffOptions struct {
	By DiffBy
	// BaseScale and Scale divide the values of the base and the new
	// profile before they are compared, such as their durations in
	// seconds or the requests each served, so that profiles of different
	// windows compare fairly. 0 means 1 (no normalisation).
	BaseScale, Scale float64
	// PerUnit names what the divided values are per, such as "s" or
	// "request"; renderers append it to values ("12 MiB/s").
	PerUnit string
}

// DiffInfo is what a differential tree holds besides its shape: for every
// node, the value of the same path (the same function names from the
// root) in the other profile, and the colour scale.
type DiffInfo struct {
	By DiffBy
	// Vanished is set when the tree has the base profile's shape (made by
	// Vanished): its own values are before, the other profile's after.
	// Otherwise the tree is the new profile's, and the other is the base.
	Vanished         bool
	BaseScale, Scale float64
	PerUnit          string

	other  []int64   // len(Types) per node
	change []float64 // len(Types) per node
}

// Before returns the value of node n in the base profile, normalised by
// BaseScale.
func (t *Tree) Before(n, typ int) float64 {
	d := t.Diff
	if d.Vanished {
		return float64(t.Total(n, typ)) / d.BaseScale
	}
	return float64(d.other[n*len(t.Types)+typ]) / d.BaseScale
}

// After returns the value of node n in the new profile, normalised by
// Scale.
func (t *Tree) After(n, typ int) float64 {
	d := t.Diff
	if d.Vanished {
		return float64(d.other[n*len(t.Types)+typ]) / d.Scale
	}
	return float64(t.Total(n, typ)) / d.Scale
}

// Change returns the colour of node n in [-1, 1]: positive when it grew,
// negative when it shrank, 0 when it did not change. The magnitude grows
// with the size of the change (as a square root, so small changes show)
// and reaches 1 for the largest change in the tree, or for a change of 5%
// of the total when every change is smaller.
func (t *Tree) Change(n, typ int) float64 {
	return t.Diff.change[n*len(t.Types)+typ]
}

// ErrKindMismatch is wrapped by the errors of Diff and Vanished when the
// two trees do not hold the same sample types.
var ErrKindMismatch = errors.New("profiles of different kinds")

// Diff returns the differential flame graph of after against base: the
// shape and widths of after, each frame holding the value of the same
// path in base and coloured by its change. Build both trees from the same
// sample types and without pruning (MinShare 0) so that every path of
// after finds its value in base; prune the result instead.
func Diff(base, after *Tree, opts DiffOptions) (*Tree, error) {
	return diff(after, base, opts, false)
}

// Vanished returns the other view of a differential flame graph: the
// shape of base, each frame holding the value of the same path in after.
// Frames that vanished from after are drawn here at their old width,
// coloured as shrunk.
func Vanished(base, after *Tree, opts DiffOptions) (*Tree, error) {
	return diff(base, after, opts, true)
}

func diff(shape, other *Tree, opts DiffOptions, vanished bool) (*Tree, error) {
	if shape == nil || other == nil {
		return nil, errors.New("diff flame graphs: nil tree")
	}
	cols, err := matchTypes(shape, other)
	if err != nil {
		return nil, err
	}
	for _, s := range []*float64{&opts.BaseScale, &opts.Scale} {
		if *s == 0 {
			*s = 1
		}
		if *s < 0 || math.IsNaN(*s) || math.IsInf(*s, 0) {
			return nil, fmt.Errorf("diff flame graphs: scale %v is not a positive number", *s)
		}
	}
	nt := len(shape.Types)
	match := make([]int32, len(shape.Nodes))
	for i := range match {
		match[i] = -1
	}
	if len(shape.Nodes) > 0 && len(other.Nodes) > 0 {
		matchPaths(shape, other, match, 0, 0)
	}
	d := &DiffInfo{
		By: opts.By, Vanished: vanished, BaseScale: opts.BaseScale, Scale: opts.Scale, PerUnit: opts.PerUnit,
		other:  make([]int64, len(shape.Nodes)*nt),
		change: make([]float64, len(shape.Nodes)*nt),
	}
	for n, m := range match {
		if m < 0 {
			continue
		}
		for c := range nt {
			d.other[n*nt+c] = other.Total(int(m), cols[c])
		}
	}
	t := *shape
	t.Diff = d
	t.colour()
	return &t, nil
}

// matchTypes maps the sample types of shape to those of other, which must
// hold the same ones.
func matchTypes(shape, other *Tree) ([]int, error) {
	describe := func(t *Tree) string {
		parts := make([]string, len(t.Types))
		for i, st := range t.Types {
			parts[i] = st.Name + "/" + st.Unit
		}
		return strings.Join(parts, ", ")
	}
	if len(shape.Types) != len(other.Types) {
		return nil, fmt.Errorf("diff flame graphs: %w: %s and %s", ErrKindMismatch, describe(shape), describe(other))
	}
	cols := make([]int, len(shape.Types))
	for i, st := range shape.Types {
		cols[i] = -1
		for j, ot := range other.Types {
			if ot == st {
				cols[i] = j
			}
		}
		if cols[i] < 0 {
			return nil, fmt.Errorf("diff flame graphs: %w: %s and %s", ErrKindMismatch, describe(shape), describe(other))
		}
	}
	return cols, nil
}

// matchPaths sets match[n] for node sn of shape and its descendants to the
// node of other at the same path, given that on is sn's counterpart.
// Children of both are sorted by name, so they merge like sorted lists.
func matchPaths(shape, other *Tree, match []int32, sn, on int) {
	match[sn] = int32(on)
	oc := on + 1
	oend := int(other.Nodes[on].End)
	for c := range shape.Children(sn) {
		name := shape.Name(c)
		for oc < oend && strings.Compare(other.Name(oc), name) < 0 {
			oc = int(other.Nodes[oc].End)
		}
		if oc < oend && other.Name(oc) == name {
			matchPaths(shape, other, match, c, oc)
		}
	}
}

// colour computes Change for every node and sample type.
func (t *Tree) colour() {
	d := t.Diff
	nt := len(t.Types)
	m := make([]float64, len(t.Nodes))
	for c := range nt {
		beforeRoot, afterRoot := math.Abs(t.Before(0, c)), math.Abs(t.After(0, c))
		ref := max(beforeRoot, afterRoot)
		if d.By == ByShare {
			ref = 1
		}
		var largest float64
		for n := range t.Nodes {
			b, a := t.Before(n, c), t.After(n, c)
			if d.By == ByShare {
				b, a = share(b, beforeRoot), share(a, afterRoot)
			}
			m[n] = a - b
			if n > 0 {
				largest = max(largest, math.Abs(m[n]))
			}
		}
		denom := max(largest, 0.05*ref)
		for n, v := range m {
			var ch float64
			if denom > 0 && math.Abs(v) > 1e-9*ref {
				ch = math.Copysign(math.Sqrt(min(math.Abs(v)/denom, 1)), v)
			}
			d.change[n*nt+c] = ch
		}
	}
}

func share(v, total float64) float64 {
	if total == 0 {
		return 0
	}
	return v / total
}
