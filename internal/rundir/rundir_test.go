package rundir

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// writeRun writes a run directory holding resultJSON (none when empty) and
// the given files, and returns its path.
func writeRun(t *testing.T, resultJSON string, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	if resultJSON != "" {
		if err := os.WriteFile(filepath.Join(dir, result.FileName), []byte(resultJSON), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// allocsProfile is a small real allocs profile, gzipped as Go writes it.
func allocsProfile(t *testing.T) []byte {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "main.handle", Filename: "main.go"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 10}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{4096}}},
		Location:   []*profile.Location{loc},
		Function:   []*profile.Function{fn},
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRead(t *testing.T) {
	const good = `{"schema_version": 1, "target": {"url": "http://127.0.0.1:6060"}}`
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	tests := []struct {
		name       string
		resultJSON string
		// files are written beside it: a run kept in a store has its
		// result gzipped.
		files   map[string][]byte
		wantErr string // empty: the run reads
	}{
		{name: "a run", resultJSON: good},
		{name: "no result.json", wantErr: "not a (finished) heapscope run"},
		{name: "not JSON", resultJSON: `{"schema_version": 1,`, wantErr: "result.json"},
		{name: "no schema version", resultJSON: `{"target": {"url": "x"}}`, wantErr: "has no schema_version"},
		{name: "newer schema", resultJSON: `{"schema_version": 99}`, wantErr: "newer than"},
		{name: "a stored run", files: map[string][]byte{result.CompressedFileName: gz(good)}},
		{name: "a stored run cut short", files: map[string][]byte{result.CompressedFileName: gz(good)[:40]}, wantErr: "result.json.gz: unexpected EOF"},
		{name: "a stored run not gzipped", files: map[string][]byte{result.CompressedFileName: []byte(good)}, wantErr: "result.json.gz: decompress: gzip: invalid header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeRun(t, tt.resultJSON, tt.files)
			res, err := Read(dir)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Read: %v", err)
			case tt.wantErr == "" && res.Target.URL != "http://127.0.0.1:6060":
				t.Errorf("Read: target %q, want the one written", res.Target.URL)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), dir)):
				t.Errorf("Read: error %v, want one naming %s and saying %q", err, dir, tt.wantErr)
			}
		})
	}
}

func TestReadStored(t *testing.T) {
	const withAllocs = `{"schema_version": 1, "profiles": [{"kind": "allocs-delta", "path": "profiles/allocs-delta.pb.gz"}]}`
	tests := []struct {
		name       string
		resultJSON string
		files      map[string][]byte
		arg        func(dir string) string
		// want
		allocs   bool
		warning  string
		errorSay string
	}{
		{name: "the run's allocs profile is parsed", resultJSON: withAllocs,
			files: map[string][]byte{"profiles/allocs-delta.pb.gz": allocsProfile(t)}, allocs: true},
		{name: "result.json names its run", resultJSON: withAllocs,
			files: map[string][]byte{"profiles/allocs-delta.pb.gz": allocsProfile(t)}, allocs: true,
			arg: func(dir string) string { return filepath.Join(dir, result.FileName) }},
		{name: "a listed profile that is missing is a warning", resultJSON: withAllocs, warning: "listed in result.json but missing"},
		{name: "a corrupt profile is an error", resultJSON: withAllocs,
			files: map[string][]byte{"profiles/allocs-delta.pb.gz": gzipped(t, "not a profile")}, errorSay: "profiles/allocs-delta.pb.gz"},
		{name: "no such directory", arg: func(dir string) string { return filepath.Join(dir, "absent") }, errorSay: "no such directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeRun(t, tt.resultJSON, tt.files)
			arg := dir
			if tt.arg != nil {
				arg = tt.arg(dir)
			}
			stored, warnings, err := ReadStored(arg)
			if tt.errorSay != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errorSay) {
					t.Fatalf("ReadStored: error %v, want one saying %q", err, tt.errorSay)
				}
				return
			}
			if err != nil || len(stored) != 1 {
				t.Fatalf("ReadStored: %d runs, err %v: want the one run", len(stored), err)
			}
			if got := stored[0].Allocs != nil; got != tt.allocs || stored[0].Dir != dir {
				t.Errorf("ReadStored: dir %s, allocs read %v: want dir %s, allocs %v", stored[0].Dir, got, dir, tt.allocs)
			}
			if joined := strings.Join(warnings, "\n"); tt.warning == "" && joined != "" || !strings.Contains(joined, tt.warning) {
				t.Errorf("ReadStored: warnings %q, want %q", joined, tt.warning)
			}
		})
	}
}

func TestReadStacksFile_directory(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadStacksFile(dir, pprofx.ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("ReadStacksFile(a directory): error %v, want one saying it is a directory", err)
	}
}

func TestReadStacks(t *testing.T) {
	data := allocsProfile(t)
	file := filepath.Join(t.TempDir(), "allocs.pb.gz")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		stdin      string
		wantErr    string
	}{
		{name: "file", path: file},
		{name: "stdin", path: "-", stdin: string(data)},
		{name: "empty stdin", path: "-", wantErr: "read profile -: not a pprof profile"},
		{name: "missing file", path: file + ".missing", wantErr: "read profile: open "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ReadStacks(tt.path, strings.NewReader(tt.stdin), pprofx.ReadOptions{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || s.Len() != 1 {
				t.Fatalf("ReadStacks = %v stacks, %v; want the profile's one", s, err)
			}
		})
	}
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
