package report

import (
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/result"
)

// TestEvidenceValue formats evidence by the unit its key names, for the
// keys internal/diagnose writes.
func TestEvidenceValue(t *testing.T) {
	tests := []struct {
		key  string
		v    float64
		want string
	}{
		{"growth_bytes", 3.48904e+06, "3.3 MiB"},
		{"limit_headroom_bytes", 512, "512 B"},
		{"bytes_per_request", 9000, "8.8 KiB/request"},
		{"bytes_per_second", 20 << 20, "20.0 MiB/s"},
		{"allocated_bytes_per_second", 1536, "1.5 KiB/s"},
		{"slope_bytes_per_minute", 108 << 20, "108 MiB/min"},
		{"live_slope_bytes_per_minute", 2048, "2.0 KiB/min"},
		{"gc_pause_p99_seconds", 0.0042, "4.2ms"},
		{"window_seconds", 30, "30s"},
		{"delay_seconds_per_second", 0.012, "12.0ms/s"},
		{"delay_seconds_per_request", 0.0003, "300µs/request"},
		{"gc_cycles_per_second", 18.6, "18.60/s"},
		{"objects_per_second", 60000, "60.0k/s"},
		{"predicted_cycles_per_second_gogc_200", 4.25, "4.25/s"},
		{"goroutines_per_minute", 70.8, "70.8/min"},
		{"objects_per_request", 12, "12/request"},
		{"gc_cpu_share", 0.019, "1.9%"},
		{"share_of_delay", 0.5, "50.0%"},
		{"stack_share_of_growth", 0.25, "25.0%"},
		{"hours_to_limit", 36, "36.0 hours"},
		{"r2", 0.9412, "0.94"},
		{"live_r2", 1, "1.00"},
		{"goroutines", 13000, "13.0k"},
		{"samples", 3, "3"},
		{"gc_cores_estimate", 0.35, "0.35"},
		// Never an exponent, however large or small.
		{"rss_over_heap", 24640000.5, "24.6M"},
		{"ratio", 1234.5, "1234"},
		{"p_value", 0.0000123, "0.0000123"},
	}
	for _, tt := range tests {
		if got := EvidenceValue(tt.key, tt.v); got != tt.want {
			t.Errorf("evidenceValue(%q, %v) = %q, want %q", tt.key, tt.v, got, tt.want)
		}
	}
}

// TestFindingsBrief_fixAtASharedLine: a high leak and a low pattern at
// one line are one entry; its fix is the leak's, which a lesser
// pattern's advice does not replace, while a pattern as severe as the
// finding it joins gives its more specific fix.
func TestFindingsBrief_fixAtASharedLine(t *testing.T) {
	leak := result.Finding{ID: "leak.inuse-growth", Severity: "high", Title: "a map that only grows", File: "cache.go", Line: 38, Fix: "bound the map."}
	pattern := result.Finding{ID: "pattern.append-growth", Severity: "low", Title: "append grows", File: "cache.go", Line: 38, Fix: "preallocate."}
	tests := []struct {
		name    string
		pattern string
		want    string
	}{
		{"a low pattern", "low", "fix: bound the map."},
		{"a pattern as severe", "high", "fix: preallocate."},
	}
	for _, tt := range tests {
		p := pattern
		p.Severity = tt.pattern
		var b strings.Builder
		findingsBrief(&b, []result.Finding{leak, p}, nil, 0, "")
		if out := b.String(); !strings.Contains(out, tt.want) || !strings.Contains(out, "also at this line: pattern.append-growth") {
			t.Errorf("%s:\n%s\nwant %q", tt.name, out, tt.want)
		}
	}
}
