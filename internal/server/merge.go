package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/view"
	"github.com/heapscope/heapscope/internal/webguard"
)

// profileKinds maps a merge's type to the kind of profile a run's
// result lists: for a snapshot (heap, goroutine), a run's last, so that
// no run counts twice; for what covers the window (allocations, CPU,
// block, mutex), its one.
var profileKinds = map[string]string{
	"heap": "heap", "allocs": "allocs-delta", "goroutine": "goroutine",
	"cpu": "cpu", "block": "block", "mutex": "mutex",
}

// The bounds of a merge besides its count of runs.
const (
	// DefaultMaxMergeBytes bounds the stored (compressed) bytes a merge reads.
	DefaultMaxMergeBytes = 2 << 30
	// DefaultMergeTimeout bounds the time a merge takes.
	DefaultMergeTimeout = 2 * time.Minute
)

// merged is a merge of a range's profiles.
type merged struct {
	m                 *pprofx.Merger
	sel               selection
	typ               string
	from, to          time.Time
	profiles, skipped int
	firstSkip         error
}

// mergeRange merges the profiles of one type of a target's runs in a
// range, one at a time: the merge holds the aggregate of their distinct
// stacks, never the profiles. A profile that cannot be read is skipped
// and counted; none at all is 404.
func (s *Server) mergeRange(ctx context.Context, q url.Values) (*merged, error) {
	typ := q.Get("type")
	kind, ok := profileKinds[typ]
	if !ok {
		return nil, badRequest("type=%q: want heap, allocs, goroutine, cpu, block or mutex", typ)
	}
	sel, err := selectionOf(q)
	if err != nil {
		return nil, err
	}
	from, to, err := s.timeRange(q)
	if err != nil {
		return nil, err
	}
	runs, err := s.rangeRuns(sel, from, to)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Limits.MergeTimeout)
	defer cancel()
	release, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	out := &merged{m: pprofx.NewMerger(pprofx.MergeOptions{}), sel: sel, typ: typ, from: from, to: to}
	var read int64
	for _, e := range runs {
		if err := ctx.Err(); err != nil {
			return nil, &requestError{http.StatusServiceUnavailable,
				fmt.Errorf("merge of %d runs stopped after %d, at %s: ask for a shorter range", len(runs), out.profiles+out.skipped, s.opts.Limits.MergeTimeout)}
		}
		dir, err := s.opts.Store.RunDir(ctx, e)
		if err != nil {
			out.skip(fmt.Errorf("%s: %w", e.Path, err))
			continue
		}
		res, err := rundir.Read(dir)
		if err != nil {
			out.skip(fmt.Errorf("%s: %w", e.Path, err))
			continue
		}
		path := ""
		for _, p := range res.Profiles {
			if p.Kind == kind {
				path = p.Path // the last of its kind
			}
		}
		if path == "" {
			continue
		}
		f, st, err := webguard.OpenFile(dir, path)
		if err != nil {
			out.skip(fmt.Errorf("%s/%s: %w", e.Path, path, err))
			continue
		}
		if read += st.Size(); read > s.opts.Limits.MaxMergeBytes {
			f.Close()
			return nil, &requestError{http.StatusUnprocessableEntity,
				fmt.Errorf("the %s profiles of the range take more than %d MiB stored: ask for a shorter range", typ, s.opts.Limits.MaxMergeBytes>>20)}
		}
		err = out.m.Add(e.Path+"/"+path, f)
		f.Close()
		if errors.Is(err, pprofx.ErrIncompatible) {
			return nil, &requestError{http.StatusUnprocessableEntity, err}
		}
		if err != nil {
			out.skip(err)
			continue
		}
		out.profiles++
	}
	if out.profiles == 0 {
		return nil, notFound("no %s profile of %s from %s to %s", typ, sel, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	return out, nil
}

func (m *merged) skip(err error) {
	m.skipped++
	if m.firstSkip == nil {
		m.firstSkip = err
	}
}

// header says what a merge took, for the response; public strips the
// store's place on disk from the reason of a skip.
func (m *merged) header(h http.Header, public func(string) string) {
	h.Set("X-Heapscope-Profiles", strconv.Itoa(m.profiles))
	if m.skipped > 0 {
		reason := strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return ' '
			}
			return r
		}, public(m.firstSkip.Error()))
		h.Set("X-Heapscope-Skipped", fmt.Sprintf("%d: %s", m.skipped, reason))
	}
}

// merge answers the merged profile of a range: one gzipped pprof, or
// folded stacks (format=folded, of sample index sample, the default
// sample type when absent).
func (s *Server) merge(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	format := q.Get("format")
	if format != "" && format != "pprof" && format != "folded" {
		s.fail(w, r, badRequest("format=%q: want pprof or folded", format))
		return
	}
	m, err := s.mergeRange(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	m.header(w.Header(), s.public)
	name := fmt.Sprintf("%s-%s-%s", m.typ, m.from.UTC().Format("20060102T150405Z"), m.to.UTC().Format("20060102T150405Z"))
	if format == "folded" {
		idx := len(m.m.SampleTypes()) - 1
		if sample := q.Get("sample"); sample != "" {
			if idx, err = m.m.SampleIndex(sample); err != nil {
				s.fail(w, r, badRequest("sample=%q: %v", sample, err))
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name+".folded"))
		err = m.m.WriteFolded(w, idx)
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name+".pb.gz"))
		err = m.m.WriteProfile(w)
	}
	if err != nil {
		s.log.Error("server", "path", r.URL.Path, "err", err)
	}
}

// mergedProfile merges a page's range and decodes the merge, for the
// renderers that take a profile; with mean=1, every value is divided by
// the number of profiles merged: the mean of a range's heap snapshots,
// where their merge is their sum.
func (s *Server) mergedProfile(r *http.Request) (*merged, *profile.Profile, error) {
	q := r.URL.Query()
	mean, err := meanParam(q)
	if err != nil {
		return nil, nil, err
	}
	m, err := s.mergeRange(r.Context(), q)
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	if err := m.m.WriteProfile(&buf); err != nil {
		return nil, nil, err
	}
	prof, err := pprofx.Parse(buf.Bytes(), 0)
	if err != nil {
		return nil, nil, err
	}
	if mean {
		prof.Scale(1 / float64(m.profiles))
	}
	return m, prof, nil
}

// meanParam reads mean: 1 (or true) for the mean of a merge, 0 or
// absent for its sum.
func meanParam(q url.Values) (bool, error) {
	switch v := q.Get("mean"); v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	default:
		return false, badRequest("mean=%q: want 1 for the mean of the merged profiles, 0 for their sum", v)
	}
}

// snapshotTypes are the merge types whose profiles are snapshots of a
// moment, not counts over a window: a merge adds them up.
var snapshotTypes = map[string]string{"heap": "heap snapshots", "goroutine": "goroutine dumps"}

// mergeTitle names a merge for its flame page, and says what its
// figures are: for snapshots, a sum of as many snapshots as runs, or
// their mean, with a link to the other.
func mergeTitle(m *merged, q url.Values, mean bool) (string, view.FlameNote) {
	span := m.from.UTC().Format(time.RFC3339) + " – " + m.to.UTC().Format(time.RFC3339)
	what, snapshots := snapshotTypes[m.typ]
	if !snapshots || m.profiles < 2 {
		return fmt.Sprintf("%s of %s, %s, %d runs merged", m.typ, m.sel, span, m.profiles), view.FlameNote{}
	}
	other := url.Values{}
	for k, v := range q {
		other[k] = v
	}
	if mean {
		other.Del("mean")
		return fmt.Sprintf("%s of %s, %s: the mean of %d %s, one per run", m.typ, m.sel, span, m.profiles, what),
			view.FlameNote{Text: "Each figure is the average over the runs.", LinkText: "Show their sum", Href: "/flame?" + other.Encode()}
	}
	other.Set("mean", "1")
	return fmt.Sprintf("%s of %s, %s: the sum of %d %s, one per run", m.typ, m.sel, span, m.profiles, what),
		view.FlameNote{Text: fmt.Sprintf("Each figure adds up %d moments: the total is not the heap at any one of them.", m.profiles),
			LinkText: "Show their mean", Href: "/flame?" + other.Encode()}
}

// flamePage draws the interactive flame graph of a range's merged
// profile, every sample type, as view draws a stored profile's.
func (s *Server) flamePage(w http.ResponseWriter, r *http.Request) {
	m, prof, err := s.mergedProfile(r)
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	mean, _ := meanParam(r.URL.Query()) // read by mergedProfile
	title, note := mergeTitle(m, r.URL.Query(), mean)
	page, err := view.FlamePage(title, note, m.typ, prof)
	if err != nil {
		s.failPage(w, r, &requestError{http.StatusUnprocessableEntity, err})
		return
	}
	m.header(w.Header(), s.public)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page)
}

// mergedKey names a merge by what selects it.
func mergedKey(q url.Values) string {
	sum := sha256.Sum256([]byte(strings.Join(append([]string{q.Get("target"), q.Get("type"), q.Get("from"), q.Get("to"), q.Get("mean")}, q["label"]...), "\x00")))
	return hex.EncodeToString(sum[:8])
}

// mergedPprof serves pprof's own web UI of a range's merge:
// /merged?target=…&type=…&from=…&to=… merges the range and redirects to
// /merged/KEY/pprof/NAME/, which serves pprof's UI of it for as long as
// the server keeps it (the last 16 merges).
func (s *Server) mergedPprof(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/merged" {
		m, prof, err := s.mergedProfile(r)
		if err != nil {
			s.failPage(w, r, err)
			return
		}
		key := mergedKey(r.URL.Query())
		// Merged anew each time: runs may have come into the range.
		v, err := view.OpenProfile(m.typ+"-merged.pb.gz", prof, view.Options{Embedded: true})
		if err != nil {
			s.failPage(w, r, &requestError{http.StatusUnprocessableEntity, err})
			return
		}
		s.mergedViews.set(key, v)
		http.Redirect(w, r, "/merged/"+key+"/pprof/"+v.Profiles()[0].Name+"/", http.StatusSeeOther)
		return
	}
	key, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/merged/"), "/")
	v, _ := s.mergedViews.get(key, nil)
	if v == nil {
		s.failPage(w, r, notFound("merge %s is no longer kept: open it again from its target's page", key))
		return
	}
	http.StripPrefix("/merged/"+key, v).ServeHTTP(w, r)
}
