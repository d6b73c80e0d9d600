package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
)

// pending is the embedded store's capture in progress: an empty directory
// under .tmp that the capture fills, then commits into place or abandons.
// Whatever happens to the process meanwhile, nothing of it is visible
// outside .tmp.
type pending struct {
	s      *Embedded
	kind   Kind
	target string
	dir    string

	mu   sync.Mutex
	done bool
}

// Begin starts a capture of a target: a fresh empty directory under .tmp.
// target is the target's key (as watch names it); empty, the committed
// result's target URL stands for it.
func (s *Embedded) Begin(kind Kind, target string) (Pending, error) {
	if err := CheckKind(kind, target); err != nil {
		return nil, err
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
	return &pending{s: s, kind: kind, target: target, dir: dir}, nil
}

// Dir returns the capture's temporary directory, to write the run into
// (itself, or a directory inside it).
func (p *pending) Dir() string { return p.dir }

// finish marks the capture done, once; release, called when its
// temporary directory is gone or placed, ends it for Check.
func (p *pending) finish() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return false
	}
	p.done = true
	return true
}

func (p *pending) release() {
	p.s.mu.Lock()
	p.s.pending--
	p.s.mu.Unlock()
}

// Abandon removes the capture's temporary directory. After Commit it does
// nothing, so that it can be deferred right after Begin.
func (p *pending) Abandon() error {
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
func (p *pending) Commit(runDir string, e Entry) (Entry, error) {
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
	pr, err := Prepare(abs, p.kind, p.target, e, p.s.now())
	if err != nil {
		return fail(err)
	}
	if !p.finish() {
		return fail(errors.New("capture already committed or abandoned"))
	}
	defer p.release()
	out, err := p.s.place(abs, pr)
	os.RemoveAll(p.dir) // gone when abs was it and was placed; leftovers else
	if err != nil {
		return fail(err)
	}
	return out, nil
}

// place fsyncs the prepared run directory at src, renames it into place
// and indexes it.
func (s *Embedded) place(src string, pr Prepared) (Entry, error) {
	if err := syncTree(src); err != nil {
		return Entry{}, err
	}
	// The rename and the indexing happen under the lock, so that a check
	// of this process never sees the directory placed and not yet indexed.
	s.mu.Lock()
	defer s.mu.Unlock()
	name, err := place(s.dir, src, pr.Base)
	if err != nil {
		if name == "" {
			return Entry{}, err
		}
		// Placed, but a parent could not be fsync'ed: index it anyway, it
		// is whole.
	}
	pr.Entry.Path = name
	if err := s.index(context.Background(), &pr); err != nil {
		return Entry{}, fmt.Errorf("index %s (in place but not indexed: Check's repair indexes it): %w", name, err)
	}
	return pr.Entry, nil
}

// index adds a prepared entry placed at pr.Entry.Path to the index in one
// transaction, and fills pr.Entry.ID.
func (s *Embedded) index(ctx context.Context, pr *Prepared) error {
	e := &pr.Entry
	return s.withTx(ctx, func(tx *sql.Tx) error {
		tid, err := targetID(tx, e.Target)
		if err != nil {
			return err
		}
		end := pr.End
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
		var load sql.NullFloat64
		if e.LoadRate != 0 {
			load = sql.NullFloat64{Float64: e.LoadRate, Valid: true}
		}
		var slot sql.NullInt64
		if !e.Slot.IsZero() {
			slot = sql.NullInt64{Int64: unixNano(e.Slot), Valid: true}
		}
		r, err := tx.Exec(`INSERT INTO entries (kind, target_id, time_ns, end_ns, path, status, bytes,
			scheduled, before_oom, trigger_expr, trigger_value, trigger_threshold, trigger_unit, capture_seconds, load_rate, slot_ns)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			string(e.Kind), tid, unixNano(e.Time), unixNano(end), e.Path, e.Status, e.Bytes,
			e.Scheduled, e.BeforeOOM, trigExpr, trigValue, trigThreshold, trigUnit, capture, load, slot)
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
		if err := addSightings(tx, e.ID, tid, pr.Findings); err != nil {
			return err
		}
		for _, v := range pr.Points {
			if _, err := tx.Exec("INSERT INTO points (target_id, metric_id, time_ns, entry_id, value) VALUES (?, ?, ?, ?, ?)",
				tid, v.ID, unixNano(end), e.ID, v.Value); err != nil {
				return err
			}
		}
		return nil
	})
}

// ProblemKey is what makes findings of a target one row of the index's
// problems: the cause key, the kind and the site. The cause key names the
// kind and the user's line, so a problem is nearly always one row.
type ProblemKey struct {
	Cause, Kind, Where string
}

// KeyOf returns a finding's ProblemKey.
func KeyOf(f Finding) ProblemKey { return ProblemKey{Cause: f.Cause, Kind: f.Kind, Where: f.Where} }

// ProblemOrder returns the index in fs of the first finding of each
// problem, sorted by its key: the order a commit updates the problems'
// rows in, the same in every commit.
func ProblemOrder(fs []Finding) []int {
	var first []int
	seen := map[ProblemKey]bool{}
	for i, f := range fs {
		if k := KeyOf(f); !seen[k] {
			seen[k] = true
			first = append(first, i)
		}
	}
	slices.SortFunc(first, func(a, b int) int {
		ka, kb := KeyOf(fs[a]), KeyOf(fs[b])
		return cmp.Or(strings.Compare(ka.Cause, kb.Cause), strings.Compare(ka.Kind, kb.Kind), strings.Compare(ka.Where, kb.Where))
	})
	return first
}

// addSightings indexes an entry's findings: each one's problem (added,
// or its latest title and evidence, its span and its count of captures
// brought up to date), then one sighting per finding, in order.
func addSightings(tx *sql.Tx, entryID, tid int64, fs []Finding) error {
	ids := map[ProblemKey]int64{}
	for _, i := range ProblemOrder(fs) {
		f := fs[i]
		k := KeyOf(f)
		ns := unixNano(f.Time)
		var id int64
		err := tx.QueryRow(`INSERT INTO problems (target_id, cause, kind, location, title, evidence, first_ns, last_ns, captures)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)
			ON CONFLICT (target_id, cause, kind, location) DO UPDATE SET
				title = CASE WHEN excluded.last_ns >= problems.last_ns THEN excluded.title ELSE problems.title END,
				evidence = CASE WHEN excluded.last_ns >= problems.last_ns THEN excluded.evidence ELSE problems.evidence END,
				first_ns = MIN(problems.first_ns, excluded.first_ns),
				last_ns = MAX(problems.last_ns, excluded.last_ns),
				captures = problems.captures + 1
			RETURNING id`,
			tid, k.Cause, k.Kind, k.Where, f.Title, EvidenceText(f.Evidence), ns, ns).Scan(&id)
		if err != nil {
			return err
		}
		ids[k] = id
	}
	for i, f := range fs {
		if _, err := tx.Exec("INSERT INTO sightings (entry_id, ord, problem_id, severity) VALUES (?, ?, ?, ?)",
			entryID, i, ids[KeyOf(f)], f.Severity); err != nil {
			return err
		}
	}
	return nil
}

// targetID returns the id of a target's row, adding it when new.
func targetID(tx *sql.Tx, key string) (int64, error) {
	if _, err := tx.Exec("INSERT INTO targets (key, slug) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", key, TargetSlug(key)); err != nil {
		return 0, err
	}
	var id int64
	err := tx.QueryRow("SELECT id FROM targets WHERE key = ?", key).Scan(&id)
	return id, err
}

// SeriesFinding is a finding of the diagnosis over a target's stored
// series (not of one run), for AddFindings.
func SeriesFinding(target string, at time.Time, f result.Finding) Finding {
	return Finding{Target: target, Time: at, Severity: f.Severity, Kind: f.ID, Title: f.Title, Where: where(f),
		Source: SourceSeries, Cause: problem.CauseOf(f), Evidence: problemEvidence(f)}
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
func (s *Embedded) Ingest(runDir string, e Entry) (Entry, error) { return IngestCopy(s, runDir, e) }

// IngestCopy is Ingest for any store: a capture that copies runDir.
func IngestCopy(s Store, runDir string, e Entry) (Entry, error) {
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
