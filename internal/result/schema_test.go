package result

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/heapscope/heapscope/internal/goldenfile"
)

func TestSchema_MatchesDocs(t *testing.T) {
	got, err := json.MarshalIndent(Schema(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	// Regenerate with go test ./internal/result -update.
	goldenfile.Check(t, filepath.Join("..", "..", "docs", "result-schema.json"), got)
}

func TestSchema_RequiresEveryNonOptionalField(t *testing.T) {
	s := Schema()
	required := map[string]bool{}
	for _, name := range s["required"].([]string) {
		required[name] = true
	}
	for _, name := range []string{"schema_version", "status", "target", "window", "memstats", "rss", "top", "findings", "profiles"} {
		if !required[name] {
			t.Errorf("%q is not required at the top level", name)
		}
	}
	for _, name := range []string{"failures", "load", "per_request", "heap_growth"} {
		if required[name] {
			t.Errorf("%q is required but optional in the type", name)
		}
	}
	window := s["properties"].(map[string]any)["window"].(map[string]any)
	start := window["properties"].(map[string]any)["start"].(map[string]any)
	if start["format"] != "date-time" {
		t.Errorf("window.start has format %v, want date-time", start["format"])
	}
}
