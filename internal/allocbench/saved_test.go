package allocbench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestReadSaved(t *testing.T) {
	r, err := Analyse(regressionSamples(5), []Pattern{sparsePtr, sparseNoptr}, threeChains, 64<<20, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadSaved(bytes.NewReader(mustJSON(t, r)))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Analyse(s.Runs, s.Patterns, s.Toolchains, s.LiveBytes, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, r), mustJSON(t, again); !bytes.Equal(a, b) {
		t.Errorf("the saved report analyses to another report:\n%s\nwant\n%s", b, a)
	}
}

func TestReadSaved_badInput(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not JSON", "allocbench: 2 patterns", "not an allocbench JSON report"},
		{"another JSON document", `{"schema_version": 1, "status": "complete"}`, "no toolchains or no runs"},
		{"unknown pattern", `{"toolchains":[{"name":"local"}],"live_bytes":1024,"runs":[{"pattern":"huge-ptr","toolchain":"local"}]}`, `pattern "huge-ptr"`},
		{"no live size", `{"toolchains":[{"name":"local"}],"runs":[{"pattern":"large-ptr-slice-retained-sparse","toolchain":"local"}]}`, "live_bytes 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSaved(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func FuzzReadSaved(f *testing.F) {
	r, err := Analyse(regressionSamples(3), []Pattern{sparsePtr, sparseNoptr}, threeChains, 64<<20, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(mustJSON(f, r))
	f.Add([]byte(`{"toolchains":[{"name":"local"}],"live_bytes":1,"runs":[{"pattern":"large-ptr-slice-retained-sparse","toolchain":"other"}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReadSaved(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever it accepts, Analyse must take without panicking, and
		// what it makes of it encodes.
		rep, err := Analyse(s.Runs, s.Patterns, s.Toolchains, s.LiveBytes, Options{})
		if err != nil {
			return
		}
		mustJSON(t, rep)
	})
}

// mustJSON encodes a report as allocbench --format json prints it.
func mustJSON(t testing.TB, r *Report) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
