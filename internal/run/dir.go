package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"

	"github.com/heapscope/heapscope/internal/atomicfile"
	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
)

// createRunDir makes a new run directory <host>-<UTC timestamp> under
// parent, adding a counter when the name is taken.
func createRunDir(parent, host string, start time.Time) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create output directory: %w", err)
	}
	base := sanitize(host) + "-" + start.UTC().Format("20060102T150405Z")
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		dir := filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			if err := os.Mkdir(filepath.Join(dir, profilesDir), 0o755); err != nil {
				return "", fmt.Errorf("create run directory: %w", err)
			}
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) || i > 1000 {
			return "", fmt.Errorf("create run directory: %w", err)
		}
	}
}

// sanitize keeps a host name safe as a directory name on any file system.
func sanitize(host string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		default:
			return '_'
		}
	}, host)
}

// memStatsRecord is one entry of memstats.json.
type memStatsRecord struct {
	Label    string           `json:"label"`
	Time     time.Time        `json:"time"`
	MemStats gcstats.MemStats `json:"memstats"`
}

// writeRun writes every file of the run, result.json last. A lean run,
// which a store keeps, is compact: its profiles recompressed at gzip's
// best level, its JSON files gzipped, no report.md (see Config.Lean).
func writeRun(dir string, c *collector, res *result.Run, delta *profile.Profile, rendered ...renderedFile) error {
	lean := c.cfg.Lean
	var errs []error
	write := func(rel string, data []byte) {
		if err := atomicfile.WriteBytes(filepath.Join(dir, rel), data); err != nil {
			errs = append(errs, err)
		}
	}
	// writeProfile writes a profile as the service sent it, or
	// recompressed to the same bytes.
	writeProfile := func(rel string, raw []byte) {
		if lean {
			raw = pprofx.Recompress(raw, c.cfg.limits.MaxDecompressed)
		}
		write(rel, raw)
	}
	writeJSON := func(rel string, v any) {
		if !lean {
			write(rel, mustJSON(v))
			return
		}
		data, err := gzipJSON(v)
		if err != nil {
			errs = append(errs, err)
			return
		}
		write(rel, data)
	}
	for i, s := range c.snaps {
		writeProfile(snapshotFile(i), s.raw)
		if s.goroutines != nil {
			writeProfile(goroutineSnapshotFile(i), s.goroutines.raw)
		}
	}
	if delta != nil {
		var buf bytes.Buffer
		if err := delta.Write(&buf); err != nil {
			errs = append(errs, fmt.Errorf("encode allocation delta: %w", err))
		} else {
			write(allocDeltaFile, buf.Bytes())
		}
	}
	if c.cpu != nil {
		writeProfile(cpuFile, c.cpu)
	}
	for name, raw := range c.extra {
		writeProfile(extraFile(name), raw)
	}
	if c.goroutine != nil {
		writeProfile(goroutineFile, c.goroutine)
	}
	if c.trace != nil {
		write(traceFile, c.trace)
	}
	// Every MemStats read, one with each heap snapshot: the first is the
	// window's start, the last (when read) its end.
	var records []memStatsRecord
	for i, s := range c.snaps {
		if s.mem == nil {
			continue
		}
		label := fmt.Sprintf("snapshot %03d", i)
		switch {
		case i == 0:
			label = "start"
		case i == len(c.snaps)-1 && c.haveMemEnd && s.memAt.Equal(c.memEndAt):
			label = "end"
		}
		records = append(records, memStatsRecord{Label: label, Time: s.memAt.UTC(), MemStats: *s.mem})
	}
	if c.haveMemEnd && (len(records) == 0 || records[len(records)-1].Label != "end") {
		records = append(records, memStatsRecord{Label: "end", Time: c.memEndAt.UTC(), MemStats: c.memEnd})
	}
	writeJSON(res.Files.MemStats, records)
	if c.load != nil {
		writeJSON(res.Files.Load, c.load.Summary()) // with the per-second series
	}
	if len(rendered) > 0 {
		if err := os.MkdirAll(filepath.Join(dir, flameDir), 0o755); err != nil {
			errs = append(errs, fmt.Errorf("create flame graph directory: %w", err))
		}
	}
	for _, f := range rendered {
		write(f.rel, f.data)
	}
	if res.Files.Report != "" {
		var md bytes.Buffer
		if err := report.Markdown(&md, res); err != nil {
			errs = append(errs, fmt.Errorf("render report: %w", err))
		} else {
			write(res.Files.Report, md.Bytes())
		}
	}
	if len(errs) > 0 {
		// A run whose files could not all be written is not complete.
		res.Status = result.StatusFailed
		for _, err := range errs {
			res.Failures = append(res.Failures, result.Failure{Step: "write run directory", Error: err.Error()})
		}
	}
	name, summary := result.FileName, mustJSON(res)
	if lean {
		var err error
		name = result.CompressedFileName
		if summary, err = gzipJSON(res); err != nil {
			return fmt.Errorf("write run directory %s: %w", dir, err)
		}
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, name), summary); err != nil {
		return fmt.Errorf("write run directory %s: %w", dir, err)
	}
	if len(errs) > 0 {
		more := ""
		if len(errs) > 1 {
			more = fmt.Sprintf(" (and %d more; result.json lists them)", len(errs)-1)
		}
		return fmt.Errorf("write run directory %s: %w%s", dir, errs[0], more)
	}
	return nil
}

// gzipJSON encodes v as compact JSON, gzipped.
func gzipJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress JSON: %w", err)
	}
	return buf.Bytes(), nil
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		// Only values of this package's own types are marshalled here.
		panic(fmt.Sprintf("encode JSON: %v", err))
	}
	return append(b, '\n')
}
