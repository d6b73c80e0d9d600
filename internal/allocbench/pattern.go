package allocbench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Object sizes of the patterns: small objects come from the size-classed
// spans (at most 32 KiB, with room for a malloc header), large ones get
// spans of their own.
const (
	SmallObject = 16 << 10
	LargeObject = 4 << 20
	// DefaultLive is how many bytes of objects a pattern keeps live.
	DefaultLive = 64 << 20
)

// Containers the patterns allocate.
const (
	ContainerSlice = "slice"
	ContainerChan  = "chan"
	ContainerMap   = "map"
)

// Pattern is one allocation pattern of the matrix.
type Pattern struct {
	// Large is true for objects of LargeObject bytes, false for
	// SmallObject.
	Large bool `json:"large"`
	// Pointers is true when the elements hold pointers.
	Pointers bool `json:"pointers"`
	// Container is ContainerSlice, ContainerChan or ContainerMap.
	Container string `json:"container"`
	// Transient is true for short-lived objects (the live set is
	// replaced several times, with a GC between), false for retained
	// ones.
	Transient bool `json:"transient"`
	// Sparse is true when only the first sixteenth of each object is
	// written (a channel buffer or a preallocated slice that stays mostly
	// empty), false when it is written whole.
	Sparse bool `json:"sparse"`
}

// Name is the pattern's name, such as "large-ptr-slice-retained-sparse".
func (p Pattern) Name() string {
	return strings.Join([]string{
		pick(p.Large, "large", "small"),
		pick(p.Pointers, "ptr", "noptr"),
		p.Container,
		pick(p.Transient, "transient", "retained"),
		pick(p.Sparse, "sparse", "full"),
	}, "-")
}

// String returns Name.
func (p Pattern) String() string { return p.Name() }

// ObjectBytes is the size of each object of the pattern.
func (p Pattern) ObjectBytes() int {
	if p.Large {
		return LargeObject
	}
	return SmallObject
}

// ChildArgs are the child program's arguments for the pattern.
func (p Pattern) ChildArgs(live int) []string {
	args := []string{
		"-object", strconv.Itoa(p.ObjectBytes()),
		"-container", p.Container,
		"-live", strconv.Itoa(live),
	}
	if p.Pointers {
		args = append(args, "-ptr")
	}
	if p.Transient {
		args = append(args, "-transient")
	}
	if p.Sparse {
		args = append(args, "-sparse")
	}
	return args
}

func pick(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// Matrix returns every pattern: 2 sizes × 2 pointer kinds × 3 containers ×
// 2 lifetimes × 2 write modes, in a fixed order.
func Matrix() []Pattern {
	var ps []Pattern
	for _, large := range []bool{true, false} {
		for _, ptr := range []bool{true, false} {
			for _, c := range []string{ContainerSlice, ContainerChan, ContainerMap} {
				for _, transient := range []bool{false, true} {
					for _, sparse := range []bool{true, false} {
						ps = append(ps, Pattern{Large: large, Pointers: ptr, Container: c, Transient: transient, Sparse: sparse})
					}
				}
			}
		}
	}
	return ps
}

// Filter returns the patterns whose name matches re; an error when none
// does.
func Filter(ps []Pattern, re *regexp.Regexp) ([]Pattern, error) {
	if re == nil {
		return ps, nil
	}
	var out []Pattern
	for _, p := range ps {
		if re.MatchString(p.Name()) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no pattern matches %q; names look like %s", re, ps[0].Name())
	}
	return out, nil
}
