package compare

import (
	"fmt"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/flame"
	"github.com/heapscope/heapscope/internal/pprofx"
)

// FlameMinShare prunes the differential flame graph's frames below this
// share of the root, so that the page stays small.
const FlameMinShare = 0.001

// Flame builds the differential flame graph of the sides' allocations
// for c's HTML page, "allocations per request" (or second, as c's PerUnit
// says): each side's allocs-delta profiles merged, both divided by the
// side's requests (or seconds), the after side's shape coloured by change
// ("changes"), and the before side's shape ("vanished"). It returns nil
// when a side has no profile.
func Flame(before, after Side, c *Comparison) (*flame.HTMLWidget, error) {
	views, err := flameViews(before, after, c.PerUnit)
	if views == nil || err != nil {
		return nil, err
	}
	return &flame.HTMLWidget{ID: "allocs-diff", Title: "allocations per " + c.PerUnit, Views: views}, nil
}

// flameViews builds Flame's views, nil when a side has no profile.
func flameViews(before, after Side, perUnit string) ([]flame.HTMLView, error) {
	var trees [2]*flame.Tree
	var scales [2]float64
	for i, s := range [2]Side{before, after} {
		var ps []*profile.Profile
		for _, smp := range s.Samples {
			if smp.Allocs == nil {
				continue
			}
			ps = append(ps, smp.Allocs)
			scales[i] += denominator(smp.Run, perUnit)
		}
		if len(ps) == 0 || !(scales[i] > 0) {
			return nil, nil
		}
		merged, err := profile.Merge(ps)
		if err != nil {
			return nil, fmt.Errorf("merge allocs-delta profiles: %w", err)
		}
		st, err := pprofx.StacksOf(merged)
		if err != nil {
			return nil, fmt.Errorf("flame graph of allocations: %w", err)
		}
		if trees[i], err = flame.Build(st, flame.Options{Sample: "alloc_space", AllTypes: true}); err != nil {
			return nil, fmt.Errorf("flame graph of allocations: %w", err)
		}
	}
	opts := flame.DiffOptions{BaseScale: scales[0], Scale: scales[1], PerUnit: perUnitShort(perUnit)}
	changes, err := flame.Diff(trees[0], trees[1], opts)
	if err != nil {
		return nil, err
	}
	vanished, err := flame.Vanished(trees[0], trees[1], opts)
	if err != nil {
		return nil, err
	}
	if changes, err = changes.Prune(FlameMinShare); err != nil {
		return nil, err
	}
	if vanished, err = vanished.Prune(FlameMinShare); err != nil {
		return nil, err
	}
	return []flame.HTMLView{{Name: "changes", Tree: changes}, {Name: "vanished", Tree: vanished}}, nil
}

func perUnitShort(perUnit string) string {
	if perUnit == PerSecond {
		return "s"
	}
	return perUnit
}
