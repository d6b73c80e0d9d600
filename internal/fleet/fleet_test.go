package fleet

import (
	"fmt"
	"math"
	"testing"
)

func TestOwner(t *testing.T) {
	keys := make([]string, 6000)
	for i := range keys {
		keys[i] = fmt.Sprintf("http://10.0.%d.%d:6060/debug/pprof/", i/250, i%250)
	}
	three := []string{"watch-a", "watch-b", "watch-c"}
	tests := []struct {
		name    string
		members []string
	}{
		{"one", []string{"watch-a"}},
		{"three", three},
		{"three, another order", []string{"watch-c", "watch-a", "watch-b"}},
		{"five", append(three, "watch-d", "watch-e")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			count := map[string]int{}
			for _, k := range keys {
				o := Owner(k, tt.members)
				if o != Owner(k, three[:0:0]) && o == "" {
					t.Fatalf("Owner(%s) = %q", k, o)
				}
				count[o]++
			}
			// Spread: each member within 10% of its fair share.
			fair := float64(len(keys)) / float64(len(tt.members))
			for _, m := range tt.members {
				if math.Abs(float64(count[m])-fair) > 0.1*fair {
					t.Errorf("%s owns %d of %d keys, fair is %.0f", m, count[m], len(keys), fair)
				}
			}
		})
	}
	if o := Owner("k", nil); o != "" {
		t.Errorf("Owner with no members: %q", o)
	}
	// Rendezvous: a member leaving moves only its own keys, and a member
	// joining takes keys only to itself.
	without := []string{"watch-a", "watch-c"}
	with := append(three, "watch-d")
	for _, k := range keys {
		before := Owner(k, three)
		if after := Owner(k, without); before != "watch-b" && after != before {
			t.Fatalf("%s moved from %s to %s when watch-b left", k, before, after)
		}
		if after := Owner(k, with); after != before && after != "watch-d" {
			t.Fatalf("%s moved from %s to %s when watch-d joined", k, before, after)
		}
	}
}
