package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
)

// ProblemKind names what Check found wrong.
type ProblemKind string

// The problems Check finds.
const (
	// ProblemMissing: an indexed entry whose directory is gone. Repair
	// drops its index row.
	ProblemMissing ProblemKind = "missing"
	// ProblemInvalid: an indexed entry whose directory has no valid
	// result.json. Not repaired: someone changed it by hand.
	ProblemInvalid ProblemKind = "invalid"
	// ProblemUnindexed: a run directory under runs/ or bundles/ that the
	// index does not know (a crash between its rename and its indexing, or
	// retention's between its index row and its directory). Repair indexes
	// it, from its entry.json and result.json.
	ProblemUnindexed ProblemKind = "unindexed"
	// ProblemStray: something under runs/ or bundles/ that is no run
	// directory. Not repaired.
	ProblemStray ProblemKind = "stray"
	// ProblemTemporary: what a capture killed mid-way left under .tmp.
	// Repair removes it.
	ProblemTemporary ProblemKind = "temporary"
	// ProblemIndex: the index database itself is damaged (PRAGMA
	// quick_check). Not repaired.
	ProblemIndex ProblemKind = "index"
	// ProblemBroken: a file of a run directory that does not read back
	// (VerifyRun: a profile that does not parse, a .gz that does not
	// decompress, a listed profile missing). Its Path is the file's. The
	// file is lost and stays as it is; repair marks an indexed complete
	// run partial, so that history no longer calls it complete, and an
	// unindexed one is indexed as partial.
	ProblemBroken ProblemKind = "broken"
)

// Problem is one thing Check found wrong.
type Problem struct {
	Kind ProblemKind `json:"kind"`
	// Path is relative to the data directory.
	Path   string `json:"path"`
	Detail string `json:"detail"`
	// Repaired says that Check(true) put it right.
	Repaired bool `json:"repaired"`
}

// String returns the problem on one line.
func (p Problem) String() string {
	s := p.Path + ": " + p.Detail
	if p.Repaired {
		s += " (repaired)"
	}
	return s
}

// CheckReport is what Check found.
type CheckReport struct {
	// Entries counts the index rows checked, Directories the run
	// directories found under runs/ and bundles/.
	Entries     int `json:"entries"`
	Directories int `json:"directories"`
	// Files counts the files of the run directories read back.
	Files int `json:"files"`
	// Found lists the problems, repaired or not, by path.
	Found []Problem `json:"found"`
	// Notes say what Check could not look at, and why.
	Notes []string `json:"notes,omitempty"`
}

// OK says whether the store is sound: every problem found was repaired.
func (r CheckReport) OK() bool {
	for _, p := range r.Found {
		if !p.Repaired {
			return false
		}
	}
	return true
}

// Problems returns the problems found, one line each.
func (r CheckReport) Problems() []string {
	out := make([]string, len(r.Found))
	for i, p := range r.Found {
		out[i] = p.String()
	}
	return out
}

// Repaired counts the problems Check(true) put right.
func (r CheckReport) Repaired() int {
	n := 0
	for _, p := range r.Found {
		if p.Repaired {
			n++
		}
	}
	return n
}

// String sums the check up: a line of counts, then a line per problem and
// per note.
func (r CheckReport) String() string {
	var b strings.Builder
	verdict := "ok"
	if !r.OK() {
		verdict = "problems"
	}
	fmt.Fprintf(&b, "%s: %d indexed entries, %d run directories, %d files read back, %d problems found, %d repaired\n",
		verdict, r.Entries, r.Directories, r.Files, len(r.Found), r.Repaired())
	for _, p := range r.Problems() {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return b.String()
}

// Check compares the index with the run directories: indexed entries
// whose directory is missing or holds no valid result.json, run
// directories the index does not know, anything else under runs/ or
// bundles/, leftovers under .tmp, the index database's own integrity, and
// every file of every run directory, read back (VerifyRun). It changes
// nothing unless repair is set. With repair, it drops the rows of missing
// directories, indexes the unindexed runs, removes the leftovers and marks
// partial the indexed complete runs with a broken file. The leftovers and the
// unindexed runs are only looked at while no other process has the store
// open (one may be placing a run that very moment); the notes say when
// they were not.
func (s *Embedded) Check(repair bool) (CheckReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r CheckReport
	fail := func(err error) (CheckReport, error) {
		return CheckReport{}, fmt.Errorf("check store %s: %w", s.dir, err)
	}

	exclusive := false
	if s.pending == 0 {
		var err error
		if exclusive, err = s.tryExclusive(); err != nil {
			return fail(err)
		}
		defer flock(s.tmpLock, syscall.LOCK_SH)
	}
	if !exclusive {
		r.Notes = append(r.Notes, "the store is in use (by another process, or by captures in progress): "+
			"leftovers under .tmp and unindexed run directories were not looked for")
	}

	if err := s.checkIndex(&r); err != nil {
		return fail(err)
	}
	for _, d := range s.missingDirs {
		rel, err := filepath.Rel(s.dir, d)
		if err != nil {
			return fail(err)
		}
		r.Found = append(r.Found, Problem{Kind: ProblemMissing, Path: filepath.ToSlash(rel), Detail: "the store's directory is missing: repair makes it"})
	}
	if v := s.staleSchema; v[0] != 0 {
		r.Found = append(r.Found, Problem{Kind: ProblemIndex, Path: IndexFile,
			Detail: fmt.Sprintf("schema version %d, older than this heapscope's %d: repair migrates it, as watch does when it starts; nothing else was checked", v[0], v[1])})
		return r, nil
	}
	indexed, err := s.indexedPaths()
	if err != nil {
		return fail(err)
	}
	r.Entries = len(indexed)
	dirs, stray, err := s.runDirs()
	if err != nil {
		return fail(err)
	}
	r.Directories = len(dirs)
	for _, p := range slices.Sorted(maps.Keys(indexed)) {
		if err := s.checkEntry(&r, p, indexed[p].id, stray[p], repair); err != nil {
			return fail(err)
		}
	}
	for _, p := range dirs {
		if err := s.checkFiles(&r, p, indexed, repair); err != nil {
			return fail(err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(stray)) {
		if _, ok := indexed[p]; !ok {
			r.Found = append(r.Found, Problem{Kind: ProblemStray, Path: p, Detail: "not a run directory: " + stray[p]})
		}
	}
	if exclusive {
		for _, p := range dirs {
			if _, ok := indexed[p]; ok {
				continue
			}
			pr := Problem{Kind: ProblemUnindexed, Path: p, Detail: "run directory not in the index"}
			if repair {
				if _, err := s.reindex(p); err != nil {
					pr.Detail += ": " + err.Error()
				} else {
					pr.Repaired = true
				}
			}
			r.Found = append(r.Found, pr)
		}
		if err := s.checkTemporary(&r, repair); err != nil {
			return fail(err)
		}
	}
	slices.SortStableFunc(r.Found, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	return r, nil
}

// checkIndex runs SQLite's own check of the index.
func (s *Embedded) checkIndex(r *CheckReport) error {
	rows, err := s.reader.Query("PRAGMA quick_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if line != "ok" {
			r.Found = append(r.Found, Problem{Kind: ProblemIndex, Path: IndexFile, Detail: line})
		}
	}
	return rows.Err()
}

// indexedRow is what Check needs of an indexed entry.
type indexedRow struct {
	id     int64
	status string
}

// indexedPaths returns the path of every indexed entry, with its id and
// status.
func (s *Embedded) indexedPaths() (map[string]indexedRow, error) {
	rows, err := s.reader.Query("SELECT id, path, status FROM entries")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]indexedRow{}
	for rows.Next() {
		var r indexedRow
		var p string
		if err := rows.Scan(&r.id, &p, &r.status); err != nil {
			return nil, err
		}
		out[p] = r
	}
	return out, rows.Err()
}

// checkFiles reads back every file of the run directory rel, reports
// each broken one, and with repair marks the run partial in the index
// when it is indexed as complete (an unindexed run's repair indexes it,
// as partial: Prepare verifies it too).
func (s *Embedded) checkFiles(r *CheckReport, rel string, indexed map[string]indexedRow, repair bool) error {
	dir := filepath.Join(s.dir, filepath.FromSlash(rel))
	broken, err := VerifyRun(dir)
	if err != nil {
		return err
	}
	n, err := fileCount(dir)
	if err != nil {
		return err
	}
	r.Files += n
	if len(broken) == 0 {
		return nil
	}
	row, ok := indexed[rel]
	note := ""
	switch {
	case ok && row.status == string(result.StatusComplete) && repair:
		err := s.withTx(context.Background(), func(tx *sql.Tx) error {
			_, err := tx.Exec("UPDATE entries SET status = ? WHERE id = ?", string(result.StatusPartial), row.id)
			return err
		})
		if err != nil {
			return err
		}
		note = " (the run is now indexed as partial)"
	case ok && row.status == string(result.StatusComplete):
		note = " (the run is indexed as complete: repair marks it partial)"
	}
	for _, b := range broken {
		r.Found = append(r.Found, Problem{Kind: ProblemBroken, Path: path.Join(rel, b.Path), Detail: b.Reason + note})
	}
	return nil
}

// fileCount counts the regular files under dir.
func fileCount(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return err
	})
	return n, err
}

// checkEntry checks that an indexed entry's directory holds a run; why
// says why it does not, when runDirs found it wanting.
func (s *Embedded) checkEntry(r *CheckReport, rel string, id int64, why string, repair bool) error {
	fi, err := os.Stat(filepath.Join(s.dir, filepath.FromSlash(rel)))
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir():
		pr := Problem{Kind: ProblemMissing, Path: rel, Detail: "indexed, but its directory is missing"}
		if repair {
			err := s.withTx(context.Background(), func(tx *sql.Tx) error { return deleteEntry(tx, id) })
			if err != nil {
				return err
			}
			pr.Repaired = true
		}
		r.Found = append(r.Found, pr)
	case err != nil:
		r.Found = append(r.Found, Problem{Kind: ProblemInvalid, Path: rel, Detail: "indexed, but " + err.Error()})
	case why != "":
		r.Found = append(r.Found, Problem{Kind: ProblemInvalid, Path: rel, Detail: "indexed, but " + why})
	}
	return nil
}

// runDirs lists the run directories under runs/ and bundles/ (relative
// to the data directory), and what else is there with why it is no run
// directory.
func (s *Embedded) runDirs() (runs []string, stray map[string]string, err error) {
	stray = map[string]string{}
	for _, top := range []string{RunsDir, BundlesDir} {
		targets, err := os.ReadDir(filepath.Join(s.dir, top))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
		for _, t := range targets {
			if !t.IsDir() {
				stray[path.Join(top, t.Name())] = "a file where target directories go"
				continue
			}
			des, err := os.ReadDir(filepath.Join(s.dir, top, t.Name()))
			if err != nil {
				return nil, nil, err
			}
			for _, de := range des {
				rel := path.Join(top, t.Name(), de.Name())
				if !de.IsDir() {
					stray[rel] = "a file where run directories go"
					continue
				}
				if _, err := rundir.Read(filepath.Join(s.dir, filepath.FromSlash(rel))); err != nil {
					stray[rel] = err.Error()
					continue
				}
				runs = append(runs, rel)
			}
		}
	}
	return runs, stray, nil
}

// reindex indexes a run directory already in place: from its entry.json
// when it has one (a commit interrupted after its rename), else from its
// location and result.json.
func (s *Embedded) reindex(rel string) (Entry, error) {
	dir := filepath.Join(s.dir, filepath.FromSlash(rel))
	res, err := rundir.Read(dir)
	if err != nil {
		return Entry{}, err
	}
	rec, err := readRecord(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rec = entryRecord{Kind: KindRun, Time: res.Window.Start}
		if strings.HasPrefix(rel, BundlesDir+"/") {
			rec.Kind = KindBundle
		}
		if rec.Target, err = s.targetOfSlug(strings.Split(rel, "/")[1]); err != nil {
			return Entry{}, err
		}
		if rec.Target == "" {
			rec.Target = res.Target.URL
		}
		if err := writeRecord(dir, rec.entry()); err != nil {
			return Entry{}, err
		}
	case err != nil:
		return Entry{}, err
	}
	pr, err := Prepare(dir, rec.Kind, rec.Target, rec.entry(), s.now())
	if err != nil {
		return Entry{}, err
	}
	pr.Entry.Path = rel
	if err := s.index(context.Background(), &pr); err != nil {
		return Entry{}, err
	}
	return pr.Entry, nil
}

// targetOfSlug returns the key of the target whose directory is slug, or
// "" when the index has none.
func (s *Embedded) targetOfSlug(slug string) (string, error) {
	var key string
	err := s.reader.QueryRow("SELECT key FROM targets WHERE slug = ?", slug).Scan(&key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return key, err
}

// checkTemporary reports (and with repair removes) what .tmp holds; the
// caller holds the exclusive lock, so nothing there is in progress.
func (s *Embedded) checkTemporary(r *CheckReport, repair bool) error {
	des, err := os.ReadDir(filepath.Join(s.dir, TempDir))
	if err != nil {
		return err
	}
	for _, de := range des {
		pr := Problem{Kind: ProblemTemporary, Path: path.Join(TempDir, de.Name()), Detail: "left by a capture or removal that did not finish"}
		if repair {
			if err := os.RemoveAll(filepath.Join(s.dir, TempDir, de.Name())); err != nil {
				return err
			}
			pr.Repaired = true
		}
		r.Found = append(r.Found, pr)
	}
	return nil
}

// Adoption is what Adopt did.
type Adoption struct {
	// Entries are the runs it indexed.
	Entries []Entry
	// Failed are the unindexed run directories it could not index, with
	// why.
	Failed []Problem
	// InUse says that the store was in use (by another process, or by a
	// capture of this one), so that nothing was looked for: a run placed
	// that instant may be on its way into the index.
	InUse bool
}

// Adopt indexes the complete run directories under runs/ and bundles/
// that the index does not know: what a commit leaves when its index
// write fails (or the process dies) after the directory is in place. It
// does what Check's repair does for them, and nothing else, and only
// while no other process has the store open; watch calls it as it
// starts.
func (s *Embedded) Adopt() (Adoption, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fail := func(err error) (Adoption, error) {
		return Adoption{}, fmt.Errorf("adopt unindexed runs of %s: %w", s.dir, err)
	}
	if s.pending > 0 {
		return Adoption{InUse: true}, nil
	}
	exclusive, err := s.tryExclusive()
	if err != nil {
		return fail(err)
	}
	defer flock(s.tmpLock, syscall.LOCK_SH)
	if !exclusive {
		return Adoption{InUse: true}, nil
	}
	indexed, err := s.indexedPaths()
	if err != nil {
		return fail(err)
	}
	dirs, _, err := s.runDirs()
	if err != nil {
		return fail(err)
	}
	var a Adoption
	for _, p := range dirs {
		if _, ok := indexed[p]; ok {
			continue
		}
		e, err := s.reindex(p)
		if err != nil {
			a.Failed = append(a.Failed, Problem{Kind: ProblemUnindexed, Path: p, Detail: "run directory not in the index: " + err.Error()})
			continue
		}
		a.Entries = append(a.Entries, e)
	}
	return a, nil
}
