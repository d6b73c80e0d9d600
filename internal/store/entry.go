package store

import (
	"encoding/json"
	"math"
	"time"

	"github.com/heapscope/heapscope/internal/result"
)

// Kind says what an entry is: a scheduled (or one-off) run, or a bundle a
// trigger captured.
type Kind string

// The kinds of entries.
const (
	KindRun    Kind = "run"
	KindBundle Kind = "bundle"
)

// Trigger records what fired a bundle: the expression and the value that
// crossed its threshold.
type Trigger struct {
	Expr      string  `json:"expr"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	// Unit is the unit of Value and Threshold ("bytes", "fraction", …).
	Unit string `json:"unit,omitempty"`
}

// Entry is one stored run directory, as the index knows it.
type Entry struct {
	// ID numbers the entry in the index.
	ID     int64  `json:"id"`
	Kind   Kind   `json:"kind"`
	Target string `json:"target"`
	// Labels are the target's labels when it was captured.
	Labels map[string]string `json:"labels,omitempty"`
	// Time is when the capture began: by default its window's start.
	Time time.Time `json:"time"`
	// End is when its window ended: the time of its series' points. Only
	// read from the index, never written by a caller.
	End time.Time `json:"-"`
	// Path is the run directory, relative to the data directory, with
	// forward slashes.
	Path string `json:"path"`
	// Status is result.json's: complete or partial.
	Status string `json:"status"`
	// Bytes is the size of the run directory's files.
	Bytes int64 `json:"bytes"`
	// Trigger is what fired a bundle; nil for a run.
	Trigger *Trigger `json:"trigger,omitempty"`
	// CaptureSeconds is, for a bundle, the time from the trigger's
	// crossing to the complete bundle.
	CaptureSeconds float64 `json:"capture_seconds,omitempty"`
	// BeforeOOM marks the last capture of a target before it was killed
	// for running out of memory (MarkBeforeOOM).
	BeforeOOM bool `json:"before_oom,omitempty"`
	// Scheduled is true for a run its schedule started: a bundle's
	// baseline when complete.
	Scheduled bool `json:"scheduled"`
	// Slot is, for a scheduled run, the instant of the schedule it was
	// captured for: at or before Time, its window's start, when the
	// capture began late (it waited for the target or a capture slot).
	// Zero for a bundle.
	Slot time.Time `json:"slot,omitzero"`
	// LateSeconds is how late after its Slot the run's window began. Only
	// read from the index, never written by a caller.
	LateSeconds float64 `json:"late_seconds,omitempty"`
	// LoadRate is the rate of requests heapscope drove during the
	// capture (result.json's load.achieved_rate); 0 when it drove none,
	// as watch does. Only read from the index, never written by a caller.
	LoadRate float64 `json:"load_rate,omitempty"`
}

// The sources of findings.
const (
	SourceRun    = "run"    // a run's result.json
	SourceBundle = "bundle" // a bundle's result.json
	SourceSeries = "series" // the diagnosis over a target's stored series
)

// Finding is one finding of a stored entry, or of the diagnosis over a
// target's series.
type Finding struct {
	Target string    `json:"target"`
	Time   time.Time `json:"time"`
	// Path is the run directory the finding comes from (relative to the
	// data directory), or what a series finding names.
	Path     string `json:"path,omitempty"`
	Severity string `json:"severity"`
	// Kind is the finding's id, as in result.json (leak.inuse-growth).
	Kind  string `json:"kind"`
	Title string `json:"title"`
	// Where is the site: file:line, or the function when no file is known.
	Where string `json:"where,omitempty"`
	// Source is SourceRun, SourceBundle or SourceSeries.
	Source string `json:"source"`
	// Cause is the finding's cause key (result.json's cause, or the key
	// problem.CauseOf gives a finding written before keys); empty for
	// a finding indexed before keys were.
	Cause string `json:"cause,omitempty"`
	// Evidence is the finding's evidence, as in result.json; none for an
	// info finding.
	Evidence map[string]float64 `json:"evidence,omitempty"`
}

// History is what History returns, each list newest first.
type History struct {
	Runs     []Entry   `json:"runs"`
	Bundles  []Entry   `json:"bundles"`
	Findings []Finding `json:"findings"`
}

// Query selects the entries and findings History returns. Zero fields
// select everything.
type Query struct {
	// Target keeps one target's.
	Target string
	// Since and Until keep the times in [Since, Until).
	Since, Until time.Time
	// Labels keeps the entries carrying every one of these labels, and
	// the series findings of the targets that have such entries.
	Labels map[string]string
	// Severities keeps the findings of these severities (info, low,
	// medium, high); all when empty.
	Severities []string
	// Limit keeps the newest Limit of each list.
	Limit int
}

// Point is one value of a series.
type Point struct {
	Time  time.Time `json:"time"`
	Value float64   `json:"value"`
}

// entryRecord is entry.json: what the index holds of an entry beyond its
// result.json, kept in the run directory so that the directory alone can
// be indexed again.
type entryRecord struct {
	Kind           Kind              `json:"kind"`
	Target         string            `json:"target"`
	Labels         map[string]string `json:"labels,omitempty"`
	Time           time.Time         `json:"time"`
	Trigger        *Trigger          `json:"trigger,omitempty"`
	CaptureSeconds float64           `json:"capture_seconds,omitempty"`
	BeforeOOM      bool              `json:"before_oom,omitempty"`
	Scheduled      bool              `json:"scheduled"`
	Slot           time.Time         `json:"slot,omitzero"`
}

func recordOf(e Entry) entryRecord {
	return entryRecord{Kind: e.Kind, Target: e.Target, Labels: e.Labels, Time: e.Time.UTC(),
		Trigger: e.Trigger, CaptureSeconds: e.CaptureSeconds, BeforeOOM: e.BeforeOOM, Scheduled: e.Scheduled, Slot: utc(e.Slot)}
}

func (r entryRecord) entry() Entry {
	return Entry{Kind: r.Kind, Target: r.Target, Labels: r.Labels, Time: r.Time.UTC(),
		Trigger: r.Trigger, CaptureSeconds: r.CaptureSeconds, BeforeOOM: r.BeforeOOM, Scheduled: r.Scheduled, Slot: utc(r.Slot)}
}

// utc is t in UTC, or the zero time.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// Lateness is how late a run's window began after its slot, e.Time −
// e.Slot, in seconds: 0 without a slot.
func Lateness(e Entry) float64 {
	if e.Slot.IsZero() || !e.Time.After(e.Slot) {
		return 0
	}
	return e.Time.Sub(e.Slot).Seconds()
}

// problemEvidence is the evidence the index keeps of a finding: none for
// an info finding, which is never a problem (the RSS breakdown's alone
// would add 1.4 KB to every capture).
func problemEvidence(f result.Finding) map[string]float64 {
	if f.Severity == "info" {
		return nil
	}
	return f.Evidence
}

// EvidenceText is how the index keeps a finding's evidence: compact JSON,
// or "" for none.
func EvidenceText(ev map[string]float64) string {
	if len(ev) == 0 {
		return ""
	}
	clean := make(map[string]float64, len(ev))
	for k, v := range ev {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			clean[k] = v
		}
	}
	data, err := json.Marshal(clean)
	if err != nil {
		return ""
	}
	return string(data)
}

// ParseEvidence reads what EvidenceText wrote; nil for "" or text it
// cannot read.
func ParseEvidence(text string) map[string]float64 {
	if text == "" {
		return nil
	}
	var ev map[string]float64
	if json.Unmarshal([]byte(text), &ev) != nil {
		return nil
	}
	return ev
}
