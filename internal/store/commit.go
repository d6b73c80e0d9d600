package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heapscope/heapscope/internal/atomicfile"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
)

// Pending is a capture in progress: an empty directory under .tmp that the
// capture fills, then commits into place or abandons. Whatever happens to
// the process meanwhile, nothing of it is visible outside .tmp.
type Pending struct {
	s      *Store
	kind   Kind
	target string
	dir    string

	mu   sync.Mutex
	done bool
}

// Begin starts a capture of a target: a fresh empty directory under .tmp.
// target is the target's key (as watch names it); empty, the committed
// result's target URL stands for it.
func (s *Store) Begin(kind Kind, target string) (*Pending, error) {
	if kind != KindRun && kind != KindBundle {
		return nil, fmt.Errorf("begin capture of %s: kind %q is neither %q nor %q", target, kind, KindRun, KindBundle)
	}
	var b [8]byte
	rand.Read(b[:])
	dir := filepath.Join(s.dir, TempDir, string(kind)+"-"+hex.EncodeToString(b[:]))
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("begin capture of %s: %w", target, err)
	}
	s.pending++
	return &Pending{s: s, kind: kind, target: target, dir: dir}, nil
}

// Dir returns the capture's temporary directory, to write the run into
// (itself, or a directory inside it).
func (p *Pending) Dir() string { return p.dir }

// finish marks the capture done, once; release, called when its
// temporary directory is gone or placed, ends it for Check.
func (p *Pending) finish() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return false
	}
	p.done = true
	return true
}

func (p *Pending) release() {
	p.s.mu.Lock()
	p.s.pending--
	p.s.mu.Unlock()
}

// Abandon removes the capture's temporary directory. After Commit it does
// nothing, so that it can be deferred right after Begin.
func (p *Pending) Abandon() error {
	if !p.finish() {
		return nil
	}
	defer p.release()
	if err := os.RemoveAll(p.dir); err != nil {
		return fmt.Errorf("abandon capture of %s: %w", p.target, err)
	}
	return nil
}

// Commit stores the run the capture wrote: runDir is Dir() or a directory
// inside it holding one run directory (result.json written last, complete
// or partial). In this order, so that a crash at any point leaves the run
// either absent or complete: entry.json is written beside result.json, the
// run's files are fsync'ed, the directory is renamed into runs/ or
// bundles/ and its parents fsync'ed, then one transaction indexes the
// entry, its labels, its findings and its series points (from result.json
// alone). The entry's kind and target are Begin's (e's are ignored); a
// zero e.Time stands for the window's start. It returns the entry with ID,
// Path, Status and Bytes filled.
//
// A run Commit refuses (no result.json, a failed run) stays in Dir() for
// the caller to abandon; past those checks the capture is over whatever
// happens: a run placed but not indexed is for Check to index, and
// anything else left of it under .tmp is removed.
func (p *Pending) Commit(runDir string, e Entry) (Entry, error) {
	fail := func(err error) (Entry, error) {
		return Entry{}, fmt.Errorf("commit capture of %s: %w", p.target, err)
	}
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return fail(err)
	}
	if rel, err := filepath.Rel(p.dir, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fail(fmt.Errorf("%s is not inside the capture's directory %s", runDir, p.dir))
	}
	res, err := rundir.Read(abs)
	if err != nil {
		return fail(err)
	}
	if !statusStored(res.Status) {
		return fail(fmt.Errorf("the run's status is %q: only complete and partial runs are stored", res.Status))
	}
	if !p.finish() {
		return fail(errors.New("capture already committed or abandoned"))
	}
	defer p.release()
	e.Kind, e.Target = p.kind, p.target
	if e.Target == "" {
		e.Target = res.Target.URL
	}
	if e.Time.IsZero() {
		e.Time = res.Window.Start
	}
	if e.Time.IsZero() {
		e.Time = p.s.now()
	}
	e.Time = e.Time.UTC()
	out, err := p.s.place(abs, e, res)
	os.RemoveAll(p.dir) // gone when abs was it and was placed; leftovers else
	if err != nil {
		return fail(err)
	}
	return out, nil
}

// place writes entry.json into the run directory at src, fsyncs it,
// renames it into place and indexes it.
func (s *Store) place(src string, e Entry, res *result.Run) (Entry, error) {
	if err := writeRecord(src, e); err != nil {
		return Entry{}, err
	}
	if err := syncTree(src); err != nil {
		return Entry{}, err
	}
	bytes, err := treeBytes(src)
	if err != nil {
		return Entry{}, err
	}
	e.Status, e.Bytes = string(res.Status), bytes

	// The rename and the indexing happen under the lock, so that a check
	// of this process never sees the directory placed and not yet indexed.
	s.mu.Lock()
	defer s.mu.Unlock()
	name, err := place(s.dir, src, entryDir(e.Kind, e.Target, e.Time, e.Trigger))
	if err != nil {
		if name == "" {
			return Entry{}, err
		}
		// Placed, but a parent could not be fsync'ed: index it anyway, it
		// is whole.
	}
	e.Path = name
	if err := s.index(context.Background(), &e, res); err != nil {
		return Entry{}, fmt.Errorf("index %s (in place but not indexed: Check's repair indexes it): %w", name, err)
	}
	return e, nil
}

// writeRecord writes entry.json into a run directory.
func writeRecord(dir string, e Entry) error {
	data, err := json.MarshalIndent(recordOf(e), "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(dir, entryFile), append(data, '\n'))
}

// readRecord reads entry.json of a run directory.
func readRecord(dir string) (entryRecord, error) {
	var r entryRecord
	data, err := os.ReadFile(filepath.Join(dir, entryFile))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, entryFile), err)
	}
	return r, nil
}

// index adds an entry placed at e.Path to the index in one transaction,
// and fills e.ID.
func (s *Store) index(ctx context.Context, e *Entry, res *result.Run) error {
	return s.withTx(ctx, func(tx *sql.Tx) error {
		tid, err := targetID(tx, e.Target)
		if err != nil {
			return err
		}
		end := windowEnd(e.Time, res)
		var trigExpr, trigUnit sql.NullString
		var trigValue, trigThreshold, capture sql.NullFloat64
		if t := e.Trigger; t != nil {
			trigExpr = sql.NullString{String: t.Expr, Valid: true}
			trigUnit = sql.NullString{String: t.Unit, Valid: true}
			trigValue = sql.NullFloat64{Float64: t.Value, Valid: true}
			trigThreshold = sql.NullFloat64{Float64: t.Threshold, Valid: true}
		}
		if e.CaptureSeconds != 0 {
			capture = sql.NullFloat64{Float64: e.CaptureSeconds, Valid: true}
		}
		r, err := tx.Exec(`INSERT INTO entries (kind, target_id, time_ns, end_ns, path, status, bytes,
			scheduled, before_oom, trigger_expr, trigger_value, trigger_threshold, trigger_unit, capture_seconds)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			string(e.Kind), tid, unixNano(e.Time), unixNano(end), e.Path, e.Status, e.Bytes,
			e.Scheduled, e.BeforeOOM, trigExpr, trigValue, trigThreshold, trigUnit, capture)
		if err != nil {
			return err
		}
		if e.ID, err = r.LastInsertId(); err != nil {
			return err
		}
		for k, v := range e.Labels {
			if _, err := tx.Exec("INSERT INTO labels (entry_id, name, value) VALUES (?, ?, ?)", e.ID, k, v); err != nil {
				return err
			}
		}
		source := SourceRun
		if e.Kind == KindBundle {
			source = SourceBundle
		}
		for _, f := range res.Findings {
			if _, err := tx.Exec(`INSERT INTO findings (entry_id, target_id, time_ns, path, source, severity, kind, title, location)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				e.ID, tid, unixNano(e.Time), e.Path, source, f.Severity, f.ID, f.Title, where(f)); err != nil {
				return err
			}
		}
		for _, v := range seriesOf(res) {
			if _, err := tx.Exec("INSERT INTO points (target_id, metric_id, time_ns, entry_id, value) VALUES (?, ?, ?, ?, ?)",
				tid, v.metric, unixNano(end), e.ID, v.value); err != nil {
				return err
			}
		}
		return nil
	})
}

// targetID returns the id of a target's row, adding it when new.
func targetID(tx *sql.Tx, key string) (int64, error) {
	if _, err := tx.Exec("INSERT INTO targets (key, slug) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", key, targetSlug(key)); err != nil {
		return 0, err
	}
	var id int64
	err := tx.QueryRow("SELECT id FROM targets WHERE key = ?", key).Scan(&id)
	return id, err
}

// SeriesFinding is a finding of the diagnosis over a target's stored
// series (not of one run), for AddFindings.
func SeriesFinding(target string, at time.Time, f result.Finding) Finding {
	return Finding{Target: target, Time: at, Severity: f.Severity, Kind: f.ID, Title: f.Title, Where: where(f), Source: SourceSeries}
}

// where names a finding's site: file:line, or the function.
func where(f result.Finding) string {
	switch {
	case f.File != "" && f.Line > 0:
		return f.File + ":" + strconv.FormatInt(f.Line, 10)
	case f.File != "":
		return f.File
	}
	return f.Function
}

// Ingest stores a copy of an existing run directory (profile's output,
// say) as Commit stores a capture: e.Kind (run when empty) and e.Target
// (the result's target URL when empty) say what it is. runDir is left as
// it was.
func (s *Store) Ingest(runDir string, e Entry) (Entry, error) {
	if _, err := rundir.Read(runDir); err != nil {
		return Entry{}, fmt.Errorf("ingest: %w", err)
	}
	if e.Kind == "" {
		e.Kind = KindRun
	}
	p, err := s.Begin(e.Kind, e.Target)
	if err != nil {
		return Entry{}, fmt.Errorf("ingest %s: %w", runDir, err)
	}
	if err := os.CopyFS(p.Dir(), os.DirFS(runDir)); err != nil {
		p.Abandon()
		return Entry{}, fmt.Errorf("ingest %s: copy: %w", runDir, err)
	}
	out, err := p.Commit(p.Dir(), e)
	if err != nil {
		p.Abandon()
		return Entry{}, fmt.Errorf("ingest %s: %w", runDir, err)
	}
	return out, nil
}
