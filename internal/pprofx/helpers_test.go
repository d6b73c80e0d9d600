package pprofx

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
)

// genSite and genSites mirror what internal/gen writes to sites.json.
type genSite struct {
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int64  `json:"line"`
	Objects  int64  `json:"objects"`
	Bytes    int64  `json:"bytes"`
	Caller   string `json:"caller"`
}

type genSites struct {
	Warmup     genSite `json:"warmup"`
	Burst      genSite `json:"burst"`
	Inlined    genSite `json:"inlined"`
	TreeLeaves int     `json:"tree_leaves"`
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// loadProfile parses a profile under testdata.
func loadProfile(t testing.TB, name string) *profile.Profile {
	t.Helper()
	p, err := Parse(readTestdata(t, name), DefaultMaxDecompressed)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return p
}

func loadSites(t testing.TB) genSites {
	t.Helper()
	var s genSites
	if err := json.Unmarshal(readTestdata(t, "sites.json"), &s); err != nil {
		t.Fatalf("decode sites.json: %v", err)
	}
	return s
}

func gunzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// gzipBytes compresses data at the fastest level: the tests' bombs are
// megabytes of zeros, which the default level takes seconds over under
// the race detector.
func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// findSite returns the site of tab at function, file and line.
func findSite(tab Table, function, file string, line int64) (Site, bool) {
	for _, s := range tab.Sites {
		if s.Function == function && s.File == file && s.Line == line {
			return s, true
		}
	}
	return Site{}, false
}

// sampleTotal sums the values of sample type name over p's samples
// carrying a frame of function at all.
func sumValues(t testing.TB, p *profile.Profile, name string) int64 {
	t.Helper()
	i, err := SampleIndex(p, name)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[i]
	}
	return sum
}
