package store

import (
	"context"
	"time"
)

// Store is where watch keeps its captures and where history, the server
// and the long-term diagnosis read them. Two backends implement it: the
// embedded store of one data directory (Open: SQLite and files), and the
// shared store of a fleet (package internal/store/shared: PostgreSQL and
// S3-compatible object storage). Both pass the one conformance suite,
// internal/store/storetest. Every method is safe for concurrent use.
type Store interface {
	// Begin starts a capture of a target: a fresh empty local directory
	// for the run to be written into, then committed or abandoned.
	// target is the target's key (as watch names it); empty, the
	// committed result's target URL stands for it.
	Begin(kind Kind, target string) (Pending, error)
	// Ingest stores a copy of an existing run directory (profile's
	// output, say) as a capture's Commit would: e.Kind (run when empty)
	// and e.Target (the result's target URL when empty) say what it is.
	// runDir is left as it was.
	Ingest(runDir string, e Entry) (Entry, error)

	// History returns the entries and findings the query selects.
	History(q Query) (History, error)
	// Series returns a target's points of one metric (Metrics) in
	// [from, to], oldest first; a zero from or to leaves that end open.
	Series(target, metric string, from, to time.Time) ([]Point, error)
	// Targets returns the keys of the targets with at least one stored
	// entry, sorted.
	Targets() ([]string, error)
	// EntryAt returns the entry stored at path (an Entry's Path).
	EntryAt(path string) (Entry, bool, error)
	// LastHealthyRun returns the target's newest complete scheduled run
	// before a time: a bundle's baseline.
	LastHealthyRun(target string, before time.Time) (Entry, bool, error)
	// MarkBeforeOOM marks the target's last entry before killedAt as the
	// last capture before an out-of-memory kill, and returns it.
	MarkBeforeOOM(target string, killedAt time.Time) (Entry, bool, error)
	// AddFindings stores findings of the diagnosis over a target's series.
	AddFindings(fs []Finding) error
	// AddEvent stores what watch saw of a target's availability: down,
	// up, a restart, an OOM kill.
	AddEvent(e TargetEvent) error
	// Events returns the availability events a query selects (its
	// Target, Since, Until and Limit), newest first.
	Events(q Query) ([]TargetEvent, error)

	// RunDir returns a local directory holding the entry's run, to read
	// with rundir, view or compare: the directory itself in the embedded
	// store, a cached copy in the shared one. The caller must not write
	// into it.
	RunDir(ctx context.Context, e Entry) (string, error)
	// RunRoot is the local directory RunDir's directories are in, at
	// their Path: what to cut from a path to say it without the
	// machine's directories.
	RunRoot() string
	// Retain removes the entries the retention no longer keeps, oldest
	// first, and returns how many.
	Retain(r Retention) (int, error)
	// Size returns the bytes of the stored runs, as indexed.
	Size() (int64, error)
	// String names the store for messages: its data directory, or its
	// database and bucket, without credentials.
	String() string
	// Close releases the store.
	Close() error
}

// Pending is a capture in progress: an empty local directory that the
// capture fills, then commits into the store or abandons. Whatever happens
// to the process meanwhile, none of it is visible to the store's readers.
type Pending interface {
	// Dir returns the capture's directory, to write the run into (itself,
	// or a directory inside it).
	Dir() string
	// Commit stores the run the capture wrote: runDir is Dir() or a
	// directory inside it holding one run directory (result.json written
	// last, complete or partial). The entry's kind and target are
	// Begin's (e's are ignored); a zero e.Time stands for the window's
	// start. It returns the entry with ID, Path, Status and Bytes filled.
	// A run Commit refuses (no result.json, a failed run) stays in Dir()
	// for the caller to abandon.
	Commit(runDir string, e Entry) (Entry, error)
	// Abandon removes the capture's directory. After Commit it does
	// nothing, so that it can be deferred right after Begin.
	Abandon() error
}

// Adopter is a store that can index the complete runs a failed index
// write left in place: the embedded store, whose commit places a run
// before it indexes it. The shared store has none to adopt: a commit
// whose index write fails removes what it uploaded, and Retain removes
// what it could not (orphans).
type Adopter interface {
	// Adopt indexes the complete runs in place that the index does not
	// know, and says which.
	Adopt() (Adoption, error)
}

var (
	_ Store   = (*Embedded)(nil)
	_ Adopter = (*Embedded)(nil)
)
