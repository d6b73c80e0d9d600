package humanize

import "testing"

func TestFormatters(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"bytes small", Bytes(512), "512 B"},
		{"bytes KiB", Bytes(1536), "1.5 KiB"},
		{"bytes MiB", Bytes(150 << 20), "150 MiB"},
		{"bytes negative", Bytes(-2 << 20), "-2.0 MiB"},
		{"number", Number(0.123456), "0.1235"},
		{"number whole", Number(1234), "1234"},
		{"number large", Number(2.464e7), "24.6M"},
		{"number small", Number(1.23e-5), "0.0000123"},
		{"number negative small", Number(-4.5e-7), "-0.00000045"},
		{"number zero", Number(0), "0"},
		{"count", Count(950), "950"},
		{"count k", Count(12345), "12.3k"},
		{"count fraction", Count(3.25), "3.2"},
		{"seconds µs", Seconds(45e-6), "45µs"},
		{"seconds ms", Seconds(2.5e-3), "2.5ms"},
		{"seconds s", Seconds(20), "20s"},
		{"seconds zero", Seconds(0), "0"},
		{"short function", ShortFunction("github.com/a/b/cache.(*W).Process"), "cache.(*W).Process"},
		{"short function stdlib", ShortFunction("bytes.(*Buffer).grow"), "bytes.(*Buffer).grow"},
		{"short file", ShortFile("/src/app/cache/cache.go"), "cache/cache.go"},
		{"short file bare", ShortFile("cache.go"), "cache.go"},
		{"location", Location("/a/b/c.go", 7), "b/c.go:7"},
		{"location unknown", Location("", 0), "?"},
		{"value ns", Value(1_500_000, "nanoseconds"), "1.5ms"},
		{"percent", Percent(0.4126), "41.3%"},
		{"percent small", Percent(0.00026), "0.03%"},
		{"percent zero", Percent(0), "0.0%"},
		{"rate fraction", Rate(0.25), "0.25/s"},
		{"rate small", Rate(12.5), "12.50/s"},
		{"rate whole", Rate(4500), "4500/s"},
		{"rate large", Rate(40000), "40.0k/s"},
		{"rate zero", Rate(0), "0/s"},
		{"hours below one", Hours(0.5), "30m0s"},
		{"hours small", Hours(0.006), "22s"}, // a leak doubling a small heap: never "0"
		{"hours", Hours(36), "36.0 hours"},
		{"hours in days", Hours(84), "3.5 days"},
		{"tally", Tally(map[string]uint64{"503": 15, "200": 44975, "404": 15}, " × "), "200 × 44975, 404 × 15, 503 × 15"},
		{"tally one", Tally(map[string]uint64{"timeout": 3}, " "), "timeout 3"},
		{"tally none", Tally(nil, " "), "none"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"text with a bar and a star", MarkdownText("a|b*c"), `a\|b\*c`},
		{"text with a line break and tags", MarkdownText("x\n<y>"), "x &lt;y&gt;"},
		{"code", MarkdownCode("(*W).Process"), "`(*W).Process`"},
		{"code with a backquote", MarkdownCode("a`b"), "``a`b``"},
		{"code starting with a backquote", MarkdownCode("`a"), "`` `a ``"},
		{"code with a bar", MarkdownCode("a|b"), "`a\\|b`"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
