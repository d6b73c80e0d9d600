package result

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestSchema_MatchesDocs(t *testing.T) {
	got, err := json.MarshalIndent(Schema(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("..", "..", "docs", "result-schema.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s (regenerate with go test ./internal/result -update): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		os.WriteFile(path+".got", got, 0o644)
		t.Errorf("%s is out of date with the Go types; run go test ./internal/result -update (new version in %s.got)", path, path)
	}
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
