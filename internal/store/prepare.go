package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/heapscope/heapscope/internal/atomicfile"
	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
)

// Prepared is a run on its way into a store: what every backend records
// of it, worked out from the capture's entry and its result.json alone,
// so that the embedded and the shared store index a run the same way.
type Prepared struct {
	// Entry has Kind, Target, Time (UTC), Status and Bytes filled beside
	// the caller's fields; ID and Path are the backend's to fill.
	Entry Entry
	// Base is where the entry goes, relative to the store's root, before
	// the suffix (-2, -3…) that keeps entries of one second apart.
	Base string
	// End is the end of the run's window: the time of its points.
	End time.Time
	// Findings are result.json's findings, Path left for the backend.
	Findings []Finding
	// Points are the figures the run measured, one per metric at most.
	Points []MetricValue
	// Broken are the files of the run that do not read back (VerifyRun):
	// with any, a complete run is stored as partial.
	Broken []BrokenFile
}

// Prepare readies the run directory dir, which a capture of kind and
// target wrote, for a store: it reads its result.json, refuses a run not
// worth storing (none, or failed), fills e (the capture's kind and
// target; a zero time stands for the window's start, or now), writes
// entry.json beside result.json and sums the directory's bytes. It reads
// every file back (VerifyRun), so that a run with a file that does not is
// never stored as complete: its status becomes partial.
func Prepare(dir string, kind Kind, target string, e Entry, now time.Time) (Prepared, error) {
	res, err := rundir.Read(dir)
	if err != nil {
		return Prepared{}, err
	}
	if !statusStored(res.Status) {
		return Prepared{}, fmt.Errorf("the run's status is %q: only complete and partial runs are stored", res.Status)
	}
	e.Kind, e.Target = kind, target
	if e.Target == "" {
		e.Target = res.Target.URL
	}
	if e.Time.IsZero() {
		e.Time = res.Window.Start
	}
	if e.Time.IsZero() {
		e.Time = now
	}
	e.Time = e.Time.UTC()
	e.Slot = utc(e.Slot)
	e.LateSeconds = Lateness(e)
	e.Status = string(res.Status)
	broken, err := VerifyRun(dir)
	if err != nil {
		return Prepared{}, err
	}
	if len(broken) > 0 {
		e.Status = string(result.StatusPartial)
	}
	if err := writeRecord(dir, e); err != nil {
		return Prepared{}, err
	}
	if e.Bytes, err = treeBytes(dir); err != nil {
		return Prepared{}, err
	}
	source := SourceRun
	if kind == KindBundle {
		source = SourceBundle
	}
	fs := make([]Finding, 0, len(res.Findings))
	for _, f := range res.Findings {
		fs = append(fs, Finding{Target: e.Target, Time: e.Time, Severity: f.Severity, Kind: f.ID,
			Title: f.Title, Where: where(f), Source: source, Cause: problem.CauseOf(f), Evidence: problemEvidence(f)})
	}
	if res.Load != nil {
		e.LoadRate = res.Load.AchievedRate
	}
	return Prepared{
		Entry:    e,
		Base:     entryDir(kind, e.Target, e.Time, e.Trigger),
		End:      windowEnd(e.Time, res),
		Findings: fs,
		Points:   SeriesOf(res),
		Broken:   broken,
	}, nil
}

// CheckKind refuses a kind that is neither run nor bundle.
func CheckKind(kind Kind, target string) error {
	if kind != KindRun && kind != KindBundle {
		return fmt.Errorf("begin capture of %s: kind %q is neither %q nor %q", target, kind, KindRun, KindBundle)
	}
	return nil
}

// writeRecord writes entry.json into a run directory.
func writeRecord(dir string, e Entry) error {
	data, err := recordBytes(e)
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(dir, EntryFile), data)
}

// recordBytes returns an entry's entry.json.
func recordBytes(e Entry) ([]byte, error) {
	data, err := json.MarshalIndent(recordOf(e), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// RecordSize returns the size of the entry.json WriteRecord writes for e:
// what a store's bytes of the entry change by when it rewrites it.
func RecordSize(e Entry) (int64, error) {
	data, err := recordBytes(e)
	return int64(len(data)), err
}

// WriteRecord writes an entry's entry.json into a run directory.
func WriteRecord(dir string, e Entry) error { return writeRecord(dir, e) }

// readRecord reads entry.json of a run directory.
func readRecord(dir string) (entryRecord, error) {
	var r entryRecord
	data, err := os.ReadFile(filepath.Join(dir, EntryFile))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, EntryFile), err)
	}
	return r, nil
}

// ReadRecord returns the entry that entry.json of a stored run directory
// records: what the index holds of it beyond result.json (no ID, Path,
// Status or Bytes).
func ReadRecord(dir string) (Entry, error) {
	r, err := readRecord(dir)
	if err != nil {
		return Entry{}, err
	}
	return r.entry(), nil
}
