package units

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"0", 0, ""},
		{"300ms", 300 * time.Millisecond, ""},
		{"1.5s", 1500 * time.Millisecond, ""},
		{"250us", 250 * time.Microsecond, ""},
		{"15m", 15 * time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"6 h", 6 * time.Hour, ""},
		{"7d", 7 * day, ""},
		{"1d12h", 36 * time.Hour, ""},
		{"1.5d", 36 * time.Hour, ""},
		{"1w", 7 * day, ""},
		{"1y", 365 * day, ""},
		{"100y", MaxDuration, ""},
		{"-5m", 0, "-5m is negative"},
		{"+5m", 0, `"+5m" is not a duration`},
		{"15", 0, `"15" is not a duration: 15 has no unit (want ms, s, m, h, d, w or y)`},
		{"1d12", 0, `"1d12" is not a duration: 12 has no unit (want ms, s, m, h, d, w or y)`},
		{"15x", 0, `"15x" is not a duration: unknown unit "x" (want ms, s, m, h, d, w or y)`},
		{"1..5h", 0, `"1..5h" is not a duration`},
		{"101y", 0, `"101y" is out of range`},
		{"", 0, "no duration (want e.g. 15m, 1h, 7d)"},
	} {
		got, err := ParseDuration(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseDuration(%q) = %v, %v; want the error %s", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"0", 0, ""},
		{"4096", 4096, ""},
		{"512B", 512, ""},
		{"64MiB", 64 << 20, ""},
		{"64 MiB", 64 << 20, ""},
		{"64Mi", 64 << 20, ""},
		{"1.5GiB", 3 << 29, ""},
		{"20gib", 20 << 30, ""},
		{"500MB", 500e6, ""},
		{"1KB", 1000, ""},
		{"2TiB", 2 << 40, ""},
		{"-1MiB", 0, "-1MiB is negative"},
		{"MiB", 0, `bad size "MiB" (want e.g. 64MiB, 20GiB, 500MB, or a number of bytes)`},
		{"1.2.3MiB", 0, `bad size "1.2.3MiB" (want e.g. 64MiB, 20GiB, 500MB, or a number of bytes)`},
		{"64M", 0, `bad size "64M" (want e.g. 64MiB, 20GiB, 500MB, or a number of bytes)`},
		{"64\u212aiB", 0, "bad size \"64\u212aiB\" (want e.g. 64MiB, 20GiB, 500MB, or a number of bytes)"},
		{"9000000TiB", 0, `size "9000000TiB" is too large`},
	} {
		got, err := ParseSize(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseSize(%q) = %v, %v; want the error %s", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// FuzzParseDuration checks that ParseDuration never panics and never
// gives a negative duration or one past MaxDuration.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "1h30m", "1.5d", "1y", "-5m", "15", "1e9h", "99999999999999999999y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseDuration(s); err == nil && (d < 0 || d > MaxDuration) {
			t.Fatalf("ParseDuration(%q) = %v", s, d)
		}
	})
}
