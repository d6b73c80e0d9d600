package bench

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/option"
)

func TestOptions_Validate(t *testing.T) {
	tests := []struct {
		name  string
		opts  RunOptions
		field string // "" for valid options
		want  string
	}{
		{"valid", RunOptions{Base: "HEAD", Count: 1, Sites: 1, Compare: Options{Alpha: 0.05, MinRuns: 1}}, "", ""},
		{"zero alpha", RunOptions{Base: "HEAD", Count: 1, Sites: 1, Compare: Options{MinRuns: 1}}, "Compare.Alpha", "Compare.Alpha 0: give a level between 0 and 1, such as 0.05"},
		{"alpha of 1", RunOptions{Base: "HEAD", Count: 1, Sites: 1, Compare: Options{Alpha: 1, MinRuns: 1}}, "Compare.Alpha", "Compare.Alpha 1: give a level"},
		{"bad confidence", RunOptions{Base: "HEAD", Count: 1, Sites: 1, Compare: Options{Alpha: 0.05, Confidence: 2, MinRuns: 1}}, "Compare.Confidence", "Compare.Confidence 2: give a level"},
		{"zero min runs", RunOptions{Base: "HEAD", Count: 1, Sites: 1, Compare: Options{Alpha: 0.05}}, "Compare.MinRuns", "Compare.MinRuns 0: give a number ≥ 1"},
		{"zero count", RunOptions{Base: "HEAD", Sites: 1, Compare: Options{Alpha: 0.05, MinRuns: 1}}, "Count", "Count 0: give a number of runs ≥ 1"},
		{"zero sites", RunOptions{Base: "HEAD", Count: 1, Compare: Options{Alpha: 0.05, MinRuns: 1}}, "Sites", "Sites 0: give a number ≥ 1"},
		{"no base", RunOptions{Count: 1, Sites: 1, Compare: Options{Alpha: 0.05, MinRuns: 1}}, "Base", "Base: give a git ref, such as HEAD~1 or main"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var oe *option.Error
			if !errors.As(err, &oe) || oe.Field != tt.field || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want the %s error %q…", err, tt.field, tt.want)
			}
		})
	}
}

// TestCompare_zeroOptionsAreTheDefaults checks that Compare, unlike
// Validate, takes zero options as the defaults.
func TestCompare_zeroOptionsAreTheDefaults(t *testing.T) {
	in := func() Input { return Input{Label: "x", R: strings.NewReader("BenchmarkX 1 2 ns/op\n")} }
	rep, err := Compare(in(), in(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Alpha != DefaultAlpha || rep.Confidence != DefaultConfidence || rep.MinRuns != DefaultMinRuns {
		t.Errorf("report alpha %v, confidence %v, min runs %d: want the defaults", rep.Alpha, rep.Confidence, rep.MinRuns)
	}
}

func TestCompareFiles(t *testing.T) {
	old, opt := filepath.Join("testdata", "bench", "leakycache.txt"), filepath.Join("testdata", "bench", "optimizedcache.txt")
	data, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, oldPath, newPath string
		wantOld, wantErr       string
	}{
		{name: "files", oldPath: old, newPath: opt, wantOld: old},
		{name: "old from stdin", oldPath: "-", newPath: opt, wantOld: "stdin"},
		{name: "both from stdin", oldPath: "-", newPath: "-", wantErr: "only one of OLD and NEW can be - (stdin)"},
		{name: "missing", oldPath: old, newPath: "nope.txt", wantErr: "open nope.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := CompareFiles(tt.oldPath, tt.newPath, strings.NewReader(string(data)), Options{Ignore: "pkg"})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Old != tt.wantOld || rep.New != opt || len(rep.Tables) == 0 {
				t.Errorf("report of %q against %q with %d tables, want %q against %q", rep.Old, rep.New, len(rep.Tables), tt.wantOld, opt)
			}
		})
	}
}
