package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseThresholds_goodFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "thresholds", "*.good.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no good fixtures: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ParseThresholds(data); err != nil {
				t.Errorf("ParseThresholds: %v", err)
			}
		})
	}
}

func TestParseThresholds_override(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "thresholds", "override.good.yml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseThresholds(data)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultThresholds()
	want.Leak.MinSnapshots = 4
	want.Leak.SlopeBytesPerMinute.High = 1 << 20
	want.HotSpot.MaxSites = 3
	want.GC.CPUShare = Levels{Low: 0.1, Medium: 0.2, High: 0.4}
	if got != want {
		t.Errorf("ParseThresholds kept or changed the wrong fields:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseThresholds_badFiles(t *testing.T) {
	wantErr := map[string]string{
		"unknown-key.bad.yml":        "field min_snapshot not found",
		"decreasing-levels.bad.yml":  "hot_spot.bytes_per_second: levels must increase",
		"share-out-of-range.bad.yml": "leak.min_r2 1.5",
		"too-few-snapshots.bad.yml":  "goroutines.min_snapshots 2: give at least 3",
		"not-a-map.bad.yml":          "parse thresholds",
		"wrong-type.bad.yml":         "cannot unmarshal",
	}
	files, err := filepath.Glob(filepath.Join("testdata", "thresholds", "*.bad.yml"))
	if err != nil || len(files) != len(wantErr) {
		t.Fatalf("bad fixtures %v, want one per case of %d", files, len(wantErr))
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseThresholds(data)
			if err == nil {
				t.Fatal("ParseThresholds accepted it")
			}
			if !strings.Contains(err.Error(), wantErr[name]) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line containing %q", err, wantErr[name])
			}
		})
	}
}

func TestThresholds_ValidateDefaults(t *testing.T) {
	if err := DefaultThresholds().Validate(); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseThresholds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "thresholds", "*.yml"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		th, err := ParseThresholds(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			return
		}
		if err := th.Validate(); err != nil {
			t.Errorf("ParseThresholds returned thresholds Validate refuses: %v", err)
		}
	})
}

// TestParseThresholds_docsShowTheDefaults keeps the thresholds file shown
// in docs/findings.md equal to the defaults.
func TestParseThresholds_docsShowTheDefaults(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "findings.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/findings.md has no yaml block")
	}
	got, err := ParseThresholds([]byte(block))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultThresholds()
	// The block leaves out the per-request levels and the series
	// fields of goroutines it shares with leak.
	got.HotSpot.BytesPerRequest, got.HotSpot.ObjectsPerRequest = want.HotSpot.BytesPerRequest, want.HotSpot.ObjectsPerRequest
	if got != want {
		t.Errorf("docs/findings.md shows\n%+v\nthe defaults are\n%+v", got, want)
	}
}
