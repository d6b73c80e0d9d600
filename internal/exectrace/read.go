package exectrace

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// Metric names of the heap figures in a trace.
const (
	metricHeapAlloc = "/memory/classes/heap/objects:bytes"
	metricHeapGoal  = "/gc/heap/goal:bytes"
)

// Range names of the GC in a trace.
const (
	rangeMark       = "GC concurrent mark phase"
	rangeMarkAssist = "GC mark assist"
	stwPrefix       = "stop-the-world ("
	stwSweepTerm    = "GC sweep termination"
	stwMarkTerm     = "GC mark termination"
)

// Timeline is the GC activity of one trace.
type Timeline struct {
	// Duration is the time from the trace's first event to its last.
	Duration time.Duration
	// Cycles are the GC cycles, in order.
	Cycles []Cycle
	// Pauses are every stop-the-world pause, for the GC or not, in order.
	Pauses []Pause
	// Heap is HeapAlloc (/memory/classes/heap/objects:bytes: live and not
	// yet swept objects) over time; Goal the heap goal.
	Heap []Point
	Goal []Point
	// MarkAssist is the total time goroutines spent in mark assists.
	MarkAssist time.Duration
	// Events is how many events the trace held.
	Events int
}

// Cycle is one GC cycle.
type Cycle struct {
	// Start is the start of the sweep-termination pause (or of the mark
	// phase when that pause was not in the trace); End the end of the
	// mark-termination pause (or of the mark phase).
	Start, End time.Duration
	// MarkStart and MarkEnd delimit the concurrent mark phase.
	MarkStart, MarkEnd time.Duration
	// SweepTermination and MarkTermination are the cycle's two
	// stop-the-world pauses; 0 when not in the trace.
	SweepTermination, MarkTermination time.Duration
	// HeapBefore is HeapAlloc when the cycle started, HeapAfter when it
	// ended, Goal the heap goal set at its end (the next cycle's
	// trigger point); 0 when the trace had no such figure.
	HeapBefore, HeapAfter, Goal uint64
	// Partial is true when the cycle began before the trace or had not
	// ended by its end: its times are clipped to the trace.
	Partial bool
}

// Mark is the length of the cycle's concurrent mark phase.
func (c Cycle) Mark() time.Duration { return c.MarkEnd - c.MarkStart }

// Length is the cycle's wall time, pauses included.
func (c Cycle) Length() time.Duration { return c.End - c.Start }

// Pause is one stop-the-world pause.
type Pause struct {
	// Start is when it began; Duration how long it lasted.
	Start, Duration time.Duration
	// Reason is the runtime's reason, such as "GC mark termination" or
	// "read mem stats".
	Reason string
	// GC is true for the GC's own pauses.
	GC bool
	// Partial is true when the pause began before the trace or had not
	// ended by its end.
	Partial bool
}

// Point is a value at a time.
type Point struct {
	T     time.Duration
	Value uint64
}

// ErrNoEvents reports a trace without a single event.
var ErrNoEvents = errors.New("the trace holds no events")

// Read reads an execution trace and derives its GC timeline. Malformed
// input, including input that makes the trace reader panic, is an error.
func Read(r io.Reader) (tl *Timeline, err error) {
	defer func() {
		if p := recover(); p != nil {
			tl, err = nil, fmt.Errorf("read trace: malformed input (the trace reader panicked: %v)", p)
		}
	}()
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	b := &builder{stw: map[trace.GoID]openPause{}, assist: map[trace.GoID]trace.Time{}}
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			if b.n == 0 {
				return nil, fmt.Errorf("read trace: truncated or corrupt: %w", err)
			}
			return nil, fmt.Errorf("read trace: truncated or corrupt after %d events: %w", b.n, err)
		}
		b.add(ev)
	}
	if b.n == 0 {
		return nil, fmt.Errorf("read trace: %w", ErrNoEvents)
	}
	return b.finish(), nil
}

type openPause struct {
	start   trace.Time
	reason  string
	partial bool
}

// builder accumulates the timeline event by event.
type builder struct {
	n          int
	first      trace.Time
	last       trace.Time
	tl         Timeline
	stw        map[trace.GoID]openPause
	assist     map[trace.GoID]trace.Time
	assistSum  time.Duration
	sweepTerm  *openPause // the open sweep-termination pause, if any
	cur        *Cycle     // the cycle whose mark phase is open, or whose mark termination is
	curMarking bool
	heap, goal uint64
}

func (b *builder) rel(t trace.Time) time.Duration { return t.Sub(b.first) }

func (b *builder) add(ev trace.Event) {
	if ev.Kind() == trace.EventSync {
		// The reader's own markers between generations: no activity.
		return
	}
	t := ev.Time()
	if b.n == 0 {
		b.first = t
	}
	b.n++
	if t > b.last {
		b.last = t
	}
	switch ev.Kind() {
	case trace.EventMetric:
		m := ev.Metric()
		if m.Value.Kind() != trace.ValueUint64 {
			return
		}
		v := m.Value.Uint64()
		switch m.Name {
		case metricHeapAlloc:
			b.heap = v
			b.tl.Heap = append(b.tl.Heap, Point{T: b.rel(t), Value: v})
		case metricHeapGoal:
			b.goal = v
			b.tl.Goal = append(b.tl.Goal, Point{T: b.rel(t), Value: v})
		}
	case trace.EventRangeBegin, trace.EventRangeActive, trace.EventRangeEnd:
		b.addRange(ev, t)
	}
}

func (b *builder) addRange(ev trace.Event, t trace.Time) {
	r := ev.Range()
	kind := ev.Kind()
	switch {
	case r.Name == rangeMark:
		switch kind {
		case trace.EventRangeBegin, trace.EventRangeActive:
			b.closeCycle(t, true)
			c := &Cycle{MarkStart: b.rel(t), Start: b.rel(t), HeapBefore: b.heap, Partial: kind == trace.EventRangeActive}
			if b.sweepTerm != nil {
				c.Start = b.rel(b.sweepTerm.start)
				c.Partial = c.Partial || b.sweepTerm.partial
			}
			b.cur, b.curMarking = c, true
		case trace.EventRangeEnd:
			if b.cur == nil {
				return
			}
			b.cur.MarkEnd = b.rel(t)
			b.cur.End = b.rel(t)
			b.curMarking = false
		}
	case r.Name == rangeMarkAssist:
		id := r.Scope.Goroutine()
		switch kind {
		case trace.EventRangeBegin:
			b.assist[id] = t
		case trace.EventRangeActive:
			b.assist[id] = b.first
		case trace.EventRangeEnd:
			if s, ok := b.assist[id]; ok {
				b.assistSum += t.Sub(s)
				delete(b.assist, id)
			}
		}
	case strings.HasPrefix(r.Name, stwPrefix):
		reason := strings.TrimSuffix(strings.TrimPrefix(r.Name, stwPrefix), ")")
		g := ev.Goroutine()
		switch kind {
		case trace.EventRangeBegin, trace.EventRangeActive:
			p := openPause{start: t, reason: reason, partial: kind == trace.EventRangeActive}
			if p.partial {
				p.start = b.first
			}
			b.stw[g] = p
			if reason == stwSweepTerm {
				b.sweepTerm = &p
			}
		case trace.EventRangeEnd:
			p, ok := b.stw[g]
			if !ok {
				// Began before the trace without an Active event.
				p = openPause{start: b.first, reason: reason, partial: true}
			}
			delete(b.stw, g)
			b.endPause(p, t)
		}
	}
}

// endPause records a pause that ended at t and ties it to its cycle.
func (b *builder) endPause(p openPause, t trace.Time) {
	d := t.Sub(p.start)
	gc := p.reason == stwSweepTerm || p.reason == stwMarkTerm
	b.tl.Pauses = append(b.tl.Pauses, Pause{Start: b.rel(p.start), Duration: d, Reason: p.reason, GC: gc, Partial: p.partial})
	switch p.reason {
	case stwSweepTerm:
		b.sweepTerm = nil
		// The runtime may open the mark phase just before or just after
		// stopping the world for it: either way the pause belongs to the
		// cycle that is marking.
		if b.cur != nil && b.curMarking && b.cur.SweepTermination == 0 {
			b.cur.SweepTermination = d
			b.cur.Start = min(b.cur.Start, b.rel(p.start))
		}
	case stwMarkTerm:
		if b.cur != nil && !b.curMarking {
			b.cur.MarkTermination = d
			b.cur.End = b.rel(t)
			b.closeCycle(t, false)
		}
	}
}

// closeCycle ends the current cycle. At the start of another cycle (next
// true) a cycle still waiting for its mark-termination pause ends as it
// is; one still marking is impossible there and is dropped as partial.
func (b *builder) closeCycle(t trace.Time, next bool) {
	c := b.cur
	if c == nil {
		return
	}
	if next && b.curMarking {
		c.MarkEnd, c.End, c.Partial = b.rel(t), b.rel(t), true
	}
	c.HeapAfter = b.heap
	c.Goal = b.goal
	b.tl.Cycles = append(b.tl.Cycles, *c)
	b.cur, b.curMarking = nil, false
}

func (b *builder) finish() *Timeline {
	end := b.last
	if b.cur != nil {
		if b.curMarking {
			b.cur.MarkEnd = b.rel(end)
		}
		if b.curMarking || b.cur.MarkTermination == 0 {
			b.cur.End = b.rel(end)
			b.cur.Partial = true
		}
		b.closeCycle(end, false)
	}
	for _, p := range b.stw {
		p.partial = true
		b.endPause(p, end)
	}
	for _, s := range b.assist {
		b.assistSum += end.Sub(s)
	}
	sortPauses(b.tl.Pauses)
	b.tl.MarkAssist = b.assistSum
	b.tl.Duration = b.rel(end)
	b.tl.Events = b.n
	return &b.tl
}
