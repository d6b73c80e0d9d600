package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxInput caps a benchmark file read by ReadInput.
const MaxInput = 64 << 20

// ReadInput reads the benchmark output at path whole, or stdin for "-"
// (labelled "stdin"), refusing more than MaxInput bytes.
func ReadInput(path string, stdin io.Reader) (Input, error) {
	label, r := path, stdin
	if path == "-" {
		label = "stdin"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return Input{}, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return Input{}, fmt.Errorf("read %s: %w", label, err)
	}
	if len(data) > MaxInput {
		return Input{}, fmt.Errorf("read %s: larger than %d bytes", label, MaxInput)
	}
	return Input{Label: label, R: bytes.NewReader(data)}, nil
}

// CompareFiles compares the benchmark outputs at oldPath and newPath, one
// of them "-" for stdin, read as ReadInput reads them, as Compare does.
func CompareFiles(oldPath, newPath string, stdin io.Reader, o Options) (*Report, error) {
	if oldPath == "-" && newPath == "-" {
		return nil, errors.New("only one of OLD and NEW can be - (stdin)")
	}
	oldIn, err := ReadInput(oldPath, stdin)
	if err != nil {
		return nil, err
	}
	newIn, err := ReadInput(newPath, stdin)
	if err != nil {
		return nil, err
	}
	return Compare(oldIn, newIn, o)
}

// Save writes the raw outputs of both sides (base.txt, new.txt) and the
// attribution profiles (mem-BENCHMARK-base.pprof, …-new.pprof) under dir,
// which it creates.
func (r *RunResult) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string][]byte{"base.txt": r.Old, "new.txt": r.New}
	for _, p := range r.Profiles {
		name := strings.NewReplacer("/", "_", " ", "_").Replace(p.Benchmark)
		files["mem-"+name+"-base.pprof"] = p.Old
		files["mem-"+name+"-new.pprof"] = p.New
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("keep raw output: %w", err)
		}
	}
	return nil
}

// GateError says which gate decisions failed, as one error; nil when none
// did.
func (r *Report) GateError() error {
	fails := r.Failures()
	if len(fails) == 0 {
		return nil
	}
	parts := make([]string, len(fails))
	for i, d := range fails {
		parts[i] = fmt.Sprintf("%s on %s: %s", d.Gate, d.Benchmark, d.Reason)
	}
	noun := "decisions"
	if len(fails) == 1 {
		noun = "decision"
	}
	return fmt.Errorf("%d gate %s failed: %s", len(fails), noun, strings.Join(parts, "; "))
}
