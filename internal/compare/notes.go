package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/heapscope/heapscope/internal/result"
)

// durationTolerance is how much two windows' durations may differ before
// the comparison says so: rates are per second, but a longer window sees
// more of a growing heap.
const durationTolerance = 0.1

// notes says where the sides differ in more than the code under test. It
// compares the first run of each side, and the runs within a side for the
// same facts.
func notes(before, after Side) []Note {
	b, a := before.Samples[0].Run, after.Samples[0].Run
	out := []Note{}
	add := func(kind, format string, args ...any) {
		out = append(out, Note{Kind: kind, Text: fmt.Sprintf(format, args...)})
	}
	if b.Target.URL != a.Target.URL {
		add("target", "different targets: %s before, %s after", b.Target.URL, a.Target.URL)
	}
	if db, da := b.Window.DurationSeconds, a.Window.DurationSeconds; differ(db, da, durationTolerance) {
		add("duration", "different windows: %s before, %s after; rates are per second, but heap in use and growth depend on the window", seconds(db), seconds(da))
	}
	switch {
	case b.Load == nil && a.Load != nil:
		add("load", "load in the after run only: figures per request are missing before, and the services did different work")
	case b.Load != nil && a.Load == nil:
		add("load", "load in the before run only: figures per request are missing after, and the services did different work")
	case b.Load != nil && a.Load != nil:
		lb, la := b.Load, a.Load
		if lb.Model != la.Model || lb.Connections != la.Connections && lb.Model == "closed" || differ(lb.RequestedRate, la.RequestedRate, 0.01) {
			add("rate", "different load: %s before, %s after", loadModel(lb), loadModel(la))
		}
		// A load URL on the target moves with it: compare what follows.
		if lb.Method != la.Method || strings.TrimPrefix(lb.URL, b.Target.URL) != strings.TrimPrefix(la.URL, a.Target.URL) {
			add("load", "different requests: %s %s before, %s %s after", lb.Method, lb.URL, la.Method, la.URL)
		}
	}
	if gb, ga := b.Target.GoVersion, a.Target.GoVersion; gb != ga {
		switch {
		case gb != "" && ga != "":
			add("go_version", "different Go versions: %s before, %s after; a toolchain change alone can move RSS and GC figures", gb, ga)
		default:
			add("go_version", "Go version known on one side only (%s before, %s after): the target was not local on the other", orUnknown(gb), orUnknown(ga))
		}
	}
	if d := dependencyChanges(b.Target.Dependencies, a.Target.Dependencies); len(d) > 0 {
		more := ""
		if len(d) > 8 {
			more = fmt.Sprintf(" and %d more", len(d)-8)
			d = d[:8]
		}
		add("dependencies", "different dependency versions: %s%s", strings.Join(d, ", "), more)
	}
	var env []string
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GODEBUG"} {
		if vb, va := b.Target.Env[k], a.Target.Env[k]; vb != va {
			env = append(env, fmt.Sprintf("%s %s → %s", k, orUnset(vb), orUnset(va)))
		}
	}
	if len(env) > 0 {
		add("env", "different runtime settings: %s", strings.Join(env, ", "))
	}
	for _, s := range []struct {
		name string
		side Side
	}{{"before", before}, {"after", after}} {
		var partial, noProfile []string
		for _, smp := range s.side.Samples {
			if smp.Run.Status != result.StatusComplete {
				partial = append(partial, smp.Label)
			}
			if smp.Allocs == nil {
				noProfile = append(noProfile, smp.Label)
			}
		}
		if len(partial) > 0 {
			add("status", "%s: %d of %d runs are not complete (%s): some figures are missing", s.name, len(partial), len(s.side.Samples), strings.Join(partial, ", "))
		}
		if len(noProfile) > 0 {
			add("profiles", "%s: %d of %d runs have no allocs-delta profile (%s): their sites are not compared", s.name, len(noProfile), len(s.side.Samples), strings.Join(noProfile, ", "))
		}
	}
	return out
}

// differ reports whether a and b differ by more than tol of the larger.
func differ(a, b, tol float64) bool {
	return math.Abs(a-b) > tol*max(math.Abs(a), math.Abs(b))
}

func seconds(s float64) string {
	if s >= 10 {
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.3g s", s)
}

func loadModel(l *result.Load) string {
	if l.Model == "closed" || l.RequestedRate == 0 {
		return fmt.Sprintf("%d connections back to back", l.Connections)
	}
	return fmt.Sprintf("%g requests/s", l.RequestedRate)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// dependencyChanges lists modules whose version differs, was added or
// was removed, sorted by path. When one side does not know its modules,
// nothing is listed.
func dependencyChanges(before, after []result.Module) []string {
	if len(before) == 0 || len(after) == 0 {
		return nil
	}
	b, a := map[string]string{}, map[string]string{}
	for _, m := range before {
		b[m.Path] = m.Version
	}
	for _, m := range after {
		a[m.Path] = m.Version
	}
	var out []string
	for path, vb := range b {
		switch va, ok := a[path]; {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s removed", path, vb))
		case va != vb:
			out = append(out, fmt.Sprintf("%s %s → %s", path, vb, va))
		}
	}
	for path, va := range a {
		if _, ok := b[path]; !ok {
			out = append(out, fmt.Sprintf("%s %s added", path, va))
		}
	}
	slices.Sort(out)
	return out
}
