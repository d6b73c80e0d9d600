package gcstats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Cycle is one GC cycle as a GODEBUG=gctrace=1 line reports it:
//
//	gc 4 @0.116s 9%: 15+2.1+0.006 ms clock, 31+0.45/0/0+0.012 ms cpu, 29->30->30 MB, 30 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
//
// Times are in seconds and sizes in bytes; the runtime prints sizes in
// whole MiB (truncated), so they are multiples of 1 MiB.
type Cycle struct {
	// Line is the 1-based line of the log.
	Line int `json:"line"`
	// N is the cycle's number, counted from 1 at process start.
	N int `json:"n"`
	// AtSeconds is when the cycle started, since process start.
	AtSeconds float64 `json:"at_seconds"`
	// GCCPUShare is the runtime's share of CPU spent in GC since process
	// start, the "N%" field, from 0 to 1.
	GCCPUShare float64 `json:"gc_cpu_share"`
	// Wall-clock durations of the phases: stop-the-world sweep
	// termination, concurrent mark, stop-the-world mark termination.
	SweepTermSeconds float64 `json:"sweep_term_seconds"`
	MarkSeconds      float64 `json:"mark_seconds"`
	MarkTermSeconds  float64 `json:"mark_term_seconds"`
	// CPU time of the phases; the mark phase's is split into assist,
	// background and idle.
	SweepTermCPUSeconds  float64 `json:"sweep_term_cpu_seconds"`
	AssistCPUSeconds     float64 `json:"assist_cpu_seconds"`
	BackgroundCPUSeconds float64 `json:"background_cpu_seconds"`
	IdleCPUSeconds       float64 `json:"idle_cpu_seconds"`
	MarkTermCPUSeconds   float64 `json:"mark_term_cpu_seconds"`
	// Heap at the start and end of the cycle, the live heap it marked,
	// and its goal.
	HeapStartBytes uint64 `json:"heap_start_bytes"`
	HeapEndBytes   uint64 `json:"heap_end_bytes"`
	HeapLiveBytes  uint64 `json:"heap_live_bytes"`
	HeapGoalBytes  uint64 `json:"heap_goal_bytes"`
	// StacksBytes and GlobalsBytes are the scannable stacks and globals
	// (Go 1.18 and later; 0 before).
	StacksBytes  uint64 `json:"stacks_bytes"`
	GlobalsBytes uint64 `json:"globals_bytes"`
	// Procs is GOMAXPROCS.
	Procs int `json:"procs"`
	// Forced reports a cycle forced by runtime.GC or debug.FreeOSMemory,
	// "(forced)".
	Forced bool `json:"forced,omitempty"`
	// Periodic reports a cycle the runtime forced after two minutes
	// without one, announced by a "GC forced" line.
	Periodic bool `json:"periodic,omitempty"`
	// LeakCheck reports a cycle that also looked for leaked goroutines,
	// "(checking for goroutine leaks)" (Go 1.26 and later).
	LeakCheck bool `json:"leak_check,omitempty"`
}

// PauseSeconds is the cycle's stop-the-world wall-clock time: sweep
// termination plus mark termination.
func (c *Cycle) PauseSeconds() float64 { return c.SweepTermSeconds + c.MarkTermSeconds }

// CPUSeconds is the cycle's total GC CPU time.
func (c *Cycle) CPUSeconds() float64 {
	return c.SweepTermCPUSeconds + c.AssistCPUSeconds + c.BackgroundCPUSeconds + c.IdleCPUSeconds + c.MarkTermCPUSeconds
}

// Scavenge is one GODEBUG=scavtrace=1 line: what the scavenger returned
// to the OS since the previous line.
//
//	scav 28504 KiB work (bg), 0 KiB work (eager), 4440 KiB now, 49% util
//	scav 2096 KiB work, 1240 KiB total, 50% util          (Go 1.19 and 1.20)
type Scavenge struct {
	// Line is the 1-based line of the log.
	Line int `json:"line"`
	// AfterCycle is the number of the last GC cycle before the line; 0
	// when none came before.
	AfterCycle int `json:"after_cycle"`
	// BackgroundBytes and EagerBytes were returned by the background
	// scavenger and eagerly (by allocation); Go 1.19 and 1.20 print one
	// figure, counted as background.
	BackgroundBytes uint64 `json:"background_bytes"`
	EagerBytes      uint64 `json:"eager_bytes"`
	// ReleasedBytes is the heap memory returned to the OS at that time.
	ReleasedBytes uint64 `json:"released_bytes"`
	// Util is the share of unscavenged heap memory in use, 0 to 1.
	Util float64 `json:"util"`
	// Forced reports a scavenge forced by debug.FreeOSMemory.
	Forced bool `json:"forced,omitempty"`
}

// Trace is what a gctrace log holds.
type Trace struct {
	Cycles    []Cycle    `json:"cycles"`
	Scavenges []Scavenge `json:"scavenges,omitempty"`
	// PeriodicGCs counts the "GC forced" lines.
	PeriodicGCs int `json:"periodic_gcs"`
	// Lines is the number of lines read; OtherLines those that are not
	// the runtime's (the program's own output).
	Lines      int `json:"lines"`
	OtherLines int `json:"other_lines"`
	// Warnings are the lines that looked like the runtime's but could not
	// be read (each a *TraceLineError), and doubts about the log.
	Warnings []error `json:"-"`
}

// TraceLineError is a gctrace or scavtrace line the parser skipped.
type TraceLineError struct {
	// Line is the 1-based line number.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *TraceLineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// ErrNoCycles is the error of ParseTrace for a log without any gctrace
// line.
var ErrNoCycles = errors.New("no gctrace lines (\"gc N @…\"): run the program with GODEBUG=gctrace=1 and read its stderr")

// LineKind is what a line of a log is.
type LineKind int

// The kinds of line.
const (
	// LineOther is not the runtime's: the program's own output.
	LineOther LineKind = iota
	// LineCycle is a gctrace line.
	LineCycle
	// LineScavenge is a scavtrace line.
	LineScavenge
	// LineGCForced is the "GC forced" line of a periodic GC.
	LineGCForced
	// LineMalformed looks like the runtime's but could not be read; a
	// warning says why.
	LineMalformed
)

// TraceParser reads a gctrace log line by line, for callers that see the
// lines as they come (a running program's stderr). The zero value is
// ready to use.
type TraceParser struct {
	t        Trace
	periodic bool
	lastN    int
}

// maxTraceLine caps the line ParseTrace reads whole; longer lines are the
// program's, skipped in pieces.
const maxTraceLine = 64 << 10

// ParseTrace reads a whole gctrace log: the stderr of a program run with
// GODEBUG=gctrace=1 (and scavtrace=1), its own output mixed in. Lines it
// cannot read come back as warnings; a log without any GC cycle gives
// ErrNoCycles.
func ParseTrace(r io.Reader) (Trace, error) {
	var p TraceParser
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Not the runtime's: skip the rest of the line.
			p.t.Lines++
			p.t.OtherLines++
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err == nil {
				continue
			}
		} else if len(line) > 0 {
			p.Line(line)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return p.Trace(), fmt.Errorf("read gctrace log line %d: %w", p.t.Lines+1, err)
		}
	}
	t := p.Trace()
	if len(t.Cycles) == 0 {
		return t, ErrNoCycles
	}
	return t, nil
}

// Trace returns what the lines read so far hold.
func (p *TraceParser) Trace() Trace {
	return p.t
}

// Line reads one line (its newline optional) and says what it was.
func (p *TraceParser) Line(line []byte) LineKind {
	p.t.Lines++
	n := p.t.Lines
	line = bytes.TrimRight(line, "\r\n")
	trimmed := bytes.TrimLeft(line, " \t")
	switch {
	case isCycleLine(trimmed):
		c, err := parseCycle(trimmed)
		if err != nil {
			p.t.Warnings = append(p.t.Warnings, &TraceLineError{Line: n, Msg: err.Error()})
			return LineMalformed
		}
		c.Line = n
		c.Periodic, p.periodic = p.periodic, false
		if c.N <= p.lastN && len(p.t.Cycles) > 0 {
			p.t.Warnings = append(p.t.Warnings, &TraceLineError{Line: n, Msg: fmt.Sprintf("cycle %d after cycle %d: the log holds more than one process's cycles", c.N, p.lastN)})
		}
		p.lastN = c.N
		p.t.Cycles = append(p.t.Cycles, c)
		return LineCycle
	case bytes.HasPrefix(trimmed, []byte("scav ")):
		s, err := parseScavenge(trimmed)
		if err != nil {
			p.t.Warnings = append(p.t.Warnings, &TraceLineError{Line: n, Msg: err.Error()})
			return LineMalformed
		}
		s.Line = n
		s.AfterCycle = p.lastN
		p.t.Scavenges = append(p.t.Scavenges, s)
		return LineScavenge
	case string(bytes.TrimRight(trimmed, " \t")) == "GC forced":
		p.t.PeriodicGCs++
		p.periodic = true
		return LineGCForced
	}
	p.t.OtherLines++
	return LineOther
}

// isCycleLine reports whether line starts like a gctrace line: "gc", a
// blank, a digit.
func isCycleLine(line []byte) bool {
	return len(line) > 3 && bytes.HasPrefix(line, []byte("gc ")) && line[3] >= '0' && line[3] <= '9'
}

// cutAnnotation removes a trailing " (text)" from s and returns the text.
func cutAnnotation(s []byte) (rest, note []byte) {
	s = bytes.TrimRight(s, " \t")
	if len(s) == 0 || s[len(s)-1] != ')' {
		return s, nil
	}
	i := bytes.LastIndex(s, []byte(" ("))
	if i < 0 {
		return s, nil
	}
	return s[:i], s[i+2 : len(s)-1]
}

// parseCycle reads a gctrace line by its fields, so that fields added by
// later Go releases (stacks, globals, annotations) do not break it.
func parseCycle(line []byte) (Cycle, error) {
	var c Cycle
	head, body, ok := bytes.Cut(line, []byte(": "))
	if !ok {
		return c, errors.New(`gc line without ": "`)
	}
	// Head: gc N @Ts P% [(annotation)...]
	f := bytes.Fields(head)
	if len(f) < 4 {
		return c, fmt.Errorf("gc line head %q: want gc N @Ts P%%", head)
	}
	n, err := strconv.Atoi(string(f[1]))
	if err != nil || n < 0 {
		return c, fmt.Errorf("gc number %q", f[1])
	}
	c.N = n
	at := f[2]
	if len(at) < 3 || at[0] != '@' || at[len(at)-1] != 's' {
		return c, fmt.Errorf("start time %q: want @Ns", at)
	}
	if c.AtSeconds, err = parseNonNeg(at[1 : len(at)-1]); err != nil {
		return c, fmt.Errorf("start time %q", at)
	}
	pct := f[3]
	if len(pct) < 2 || pct[len(pct)-1] != '%' {
		return c, fmt.Errorf("GC CPU share %q: want N%%", pct)
	}
	share, err := parseNonNeg(pct[:len(pct)-1])
	if err != nil {
		return c, fmt.Errorf("GC CPU share %q", pct)
	}
	c.GCCPUShare = share / 100
	if bytes.Contains(head, []byte("goroutine leak")) {
		c.LeakCheck = true
	}

	// Body: comma-separated fields, then annotations such as (forced).
	for {
		var note []byte
		body, note = cutAnnotation(body)
		if note == nil {
			break
		}
		if string(note) == "forced" {
			c.Forced = true
		}
	}
	var seen uint8
	const (
		sClock = 1 << iota
		sCPU
		sHeap
		sGoal
	)
	for part := range bytes.SplitSeq(body, []byte(", ")) {
		part = bytes.TrimSpace(part)
		switch {
		case bytes.HasSuffix(part, []byte(" ms clock")):
			v, err := parsePhases(bytes.TrimSuffix(part, []byte(" ms clock")), false)
			if err != nil {
				return c, fmt.Errorf("clock times %q: %w", part, err)
			}
			c.SweepTermSeconds, c.MarkSeconds, c.MarkTermSeconds = v[0], v[1], v[4]
			seen |= sClock
		case bytes.HasSuffix(part, []byte(" ms cpu")):
			v, err := parsePhases(bytes.TrimSuffix(part, []byte(" ms cpu")), true)
			if err != nil {
				return c, fmt.Errorf("CPU times %q: %w", part, err)
			}
			c.SweepTermCPUSeconds, c.AssistCPUSeconds, c.BackgroundCPUSeconds, c.IdleCPUSeconds, c.MarkTermCPUSeconds = v[0], v[1], v[2], v[3], v[4]
			seen |= sCPU
		case bytes.HasSuffix(part, []byte(" MB")) && bytes.Contains(part, []byte("->")):
			h := bytes.Split(bytes.TrimSuffix(part, []byte(" MB")), []byte("->"))
			if len(h) != 3 {
				return c, fmt.Errorf("heap sizes %q: want A->B->C MB", part)
			}
			var v [3]uint64
			for i, s := range h {
				if v[i], err = parseMB(s); err != nil {
					return c, fmt.Errorf("heap sizes %q", part)
				}
			}
			c.HeapStartBytes, c.HeapEndBytes, c.HeapLiveBytes = v[0], v[1], v[2]
			seen |= sHeap
		case bytes.HasSuffix(part, []byte(" MB goal")):
			if c.HeapGoalBytes, err = parseMB(bytes.TrimSuffix(part, []byte(" MB goal"))); err != nil {
				return c, fmt.Errorf("heap goal %q", part)
			}
			seen |= sGoal
		case bytes.HasSuffix(part, []byte(" MB stacks")):
			if c.StacksBytes, err = parseMB(bytes.TrimSuffix(part, []byte(" MB stacks"))); err != nil {
				return c, fmt.Errorf("stacks %q", part)
			}
		case bytes.HasSuffix(part, []byte(" MB globals")):
			if c.GlobalsBytes, err = parseMB(bytes.TrimSuffix(part, []byte(" MB globals"))); err != nil {
				return c, fmt.Errorf("globals %q", part)
			}
		case bytes.HasSuffix(part, []byte(" P")):
			p, err := strconv.Atoi(string(bytes.TrimSuffix(part, []byte(" P"))))
			if err != nil || p < 0 {
				return c, fmt.Errorf("procs %q", part)
			}
			c.Procs = p
		}
		// Other fields are later releases' additions: skipped.
	}
	if seen != sClock|sCPU|sHeap|sGoal {
		return c, errors.New("gc line lacks one of: ms clock, ms cpu, A->B->C MB, MB goal")
	}
	return c, nil
}

// parsePhases reads "a+b+c" (clock) or "a+b/c/d+e" (cpu) milliseconds as
// seconds: sweep termination, mark (or assist, background, idle), mark
// termination. For clock times, the mark time is at index 1 and mark
// termination at 4.
func parsePhases(s []byte, cpu bool) ([5]float64, error) {
	var v [5]float64
	parts := bytes.Split(s, []byte("+"))
	if len(parts) != 3 {
		return v, errors.New("want three phases")
	}
	mark := [][]byte{parts[1]}
	if cpu {
		mark = bytes.Split(parts[1], []byte("/"))
		if len(mark) != 3 {
			return v, errors.New("want assist/background/idle mark times")
		}
	}
	vals := append(append([][]byte{parts[0]}, mark...), parts[2])
	for i, b := range vals {
		ms, err := parseNonNeg(b)
		if err != nil {
			return v, fmt.Errorf("%q is not a number of ms", b)
		}
		v[i] = ms / 1e3
	}
	if !cpu {
		v[4] = v[2]
		v[2] = 0
	}
	return v, nil
}

// parseNonNeg parses a finite, non-negative decimal number.
func parseNonNeg(b []byte) (float64, error) {
	if len(b) == 0 || !(b[0] >= '0' && b[0] <= '9' || b[0] == '.') {
		return 0, errors.New("not a number")
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || !finite(v) || v < 0 {
		return 0, errors.New("not a number")
	}
	return v, nil
}

// parseMB parses a whole number of MiB as bytes.
func parseMB(b []byte) (uint64, error) {
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || v > 1<<43 {
		return 0, errors.New("not a number of MB")
	}
	return v << 20, nil
}

// parseKiB parses a whole number of KiB as bytes.
func parseKiB(b []byte) (uint64, error) {
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil || v > 1<<53 {
		return 0, errors.New("not a number of KiB")
	}
	return v << 10, nil
}

// parseScavenge reads a scavtrace line by its fields.
func parseScavenge(line []byte) (Scavenge, error) {
	var s Scavenge
	body := bytes.TrimPrefix(line, []byte("scav "))
	if rest, note := cutAnnotation(body); string(note) == "forced" {
		body, s.Forced = rest, true
	}
	seen := 0
	for part := range bytes.SplitSeq(body, []byte(", ")) {
		part = bytes.TrimSpace(part)
		num, rest, _ := bytes.Cut(part, []byte(" "))
		switch string(rest) {
		case "KiB work (bg)", "KiB work":
			v, err := parseKiB(num)
			if err != nil {
				return s, fmt.Errorf("scav field %q: %w", part, err)
			}
			s.BackgroundBytes = v
			seen++
		case "KiB work (eager)":
			v, err := parseKiB(num)
			if err != nil {
				return s, fmt.Errorf("scav field %q: %w", part, err)
			}
			s.EagerBytes = v
		case "KiB now", "KiB total":
			v, err := parseKiB(num)
			if err != nil {
				return s, fmt.Errorf("scav field %q: %w", part, err)
			}
			s.ReleasedBytes = v
			seen++
		case "util":
			if len(num) < 2 || num[len(num)-1] != '%' {
				return s, fmt.Errorf("scav field %q", part)
			}
			u, err := parseNonNeg(num[:len(num)-1])
			if err != nil {
				return s, fmt.Errorf("scav field %q", part)
			}
			s.Util = u / 100
			seen++
		}
	}
	if seen < 3 {
		return s, errors.New("scav line lacks one of: KiB work, KiB now (or total), % util")
	}
	return s, nil
}
