package problem

import (
	"strings"
	"testing"
	"time"
)

func TestHealthOf(t *testing.T) {
	leak := Problem{Kind: "leak.inuse-growth", Where: "cache.go:38", Severity: "high", State: Open, Cause: "leak at cache.go:38"}
	gc := Problem{Kind: "gc.pressure", Severity: "medium", State: Open, Cause: "gc.pressure"}
	low := Problem{Kind: "growth.bounded", Severity: "low", State: Open, Cause: "growth"}
	gone := leak
	gone.State = Resolved
	unsure := leak
	unsure.Severity, unsure.Unconfirmed = "low", true
	tests := []struct {
		name    string
		s       Signals
		health  string
		reasons []string // each in the reason of that index
		top     string   // the top problem's cause
	}{
		{"nothing stored", Signals{}, HealthUnknown, []string{"nothing captured yet"}, ""},
		{"captured, nothing open", Signals{Captured: true, Problems: []Problem{low, gone}}, HealthOK, nil, ""},
		{"a leak is not ok", Signals{Captured: true, Problems: []Problem{gc, leak}}, HealthProblem, []string{"high problem: leak.inuse-growth at cache.go:38"}, leak.Cause},
		{"down beats a problem", Signals{Captured: true, Problems: []Problem{leak}, Failures: 3, LastError: "connection refused"},
			HealthDown, []string{"3 captures failed in a row: connection refused", "high problem"}, leak.Cause},
		{"down, as stored events say", Signals{Captured: true, Problems: []Problem{leak}, DownSince: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), DownDetail: "connection refused"},
			HealthDown, []string{"down since 2026-12-01T03:00:00Z: connection refused", "high problem"}, leak.Cause},
		{"OOM-killed", Signals{Captured: true, BeforeOOM: true, Last: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}, HealthDown, []string{"OOM-killed after its last capture (2026-12-01T03:00:00Z)"}, ""},
		{"a trigger that cannot fire", Signals{Captured: true, Unarmed: []string{"memory>=80%: no memory limit"}}, HealthDegraded, []string{"trigger memory>=80%: no memory limit"}, ""},
		{"an unconfirmed growth is said, not a problem", Signals{Captured: true, Problems: []Problem{unsure}}, HealthOK,
			[]string{"unconfirmed until the next capture: leak.inuse-growth at cache.go:38"}, ""},
		{"partial, and a problem", Signals{Captured: true, Partial: true, Problems: []Problem{gc}}, HealthProblem, []string{"medium problem: gc.pressure", "its last capture is partial"}, gc.Cause},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := HealthOf(tt.s)
			if st.Health != tt.health || len(st.Reasons) < len(tt.reasons) {
				t.Fatalf("health %s %q, want %s with %q", st.Health, st.Reasons, tt.health, tt.reasons)
			}
			for i, r := range tt.reasons {
				if !strings.Contains(st.Reasons[i], r) {
					t.Errorf("reason %d %q does not say %q", i, st.Reasons[i], r)
				}
			}
			top := ""
			if st.Top != nil {
				top = st.Top.Cause
			}
			if top != tt.top {
				t.Errorf("top problem %q, want %q", top, tt.top)
			}
		})
	}
}
