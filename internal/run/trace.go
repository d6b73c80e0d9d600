package run

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/heapscope/heapscope/internal/exectrace"
	"github.com/heapscope/heapscope/internal/result"
)

// traceFile is where a run keeps the execution trace of Config.Trace.
const traceFile = "profiles/trace.out"

// traceMaxPoints is how many points of the heap and goal series
// result.json keeps.
const traceMaxPoints = 500

// validateTrace checks Config.Trace: whole seconds, at least 1, within
// the window.
func (c *Config) validateTrace() error {
	switch {
	case c.Trace == 0:
		return nil
	case c.Trace < time.Second || c.Trace%time.Second != 0:
		return fmt.Errorf("trace %s: the pprof endpoint takes whole seconds, at least 1s", c.Trace)
	case c.Trace > c.Duration:
		return fmt.Errorf("trace %s is longer than the %s window", c.Trace, c.Duration)
	}
	return nil
}

// startTrace fetches an execution trace of Config.Trace from the start of
// the window, when asked, and derives its GC timeline.
func (c *collector) startTrace(ctx, wctx context.Context, wg *sync.WaitGroup) {
	if c.cfg.Trace <= 0 {
		return
	}
	seconds := int(c.cfg.Trace / time.Second)
	wg.Go(func() {
		raw, err := c.cfg.fetcher.Profile(wctx, "trace", url.Values{"seconds": {strconv.Itoa(seconds)}})
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w before the trace ended", ErrInterrupted)
			}
			c.fails.add("execution trace", err)
			return
		}
		// The raw trace is kept even when it cannot be read: it is
		// what the service sent.
		c.trace = raw
		tl, err := exectrace.Read(bytes.NewReader(raw))
		if err != nil {
			c.fails.add("execution trace", err)
			return
		}
		c.traceTimeline = tl
	})
}

// addTrace records the trace and its timeline in the result.
func (c *collector) addTrace(res *result.Run, start time.Time) {
	if c.trace == nil {
		return
	}
	res.Profiles = append(res.Profiles, result.Profile{Kind: "trace", Path: traceFile, Time: start.UTC(),
		Semantics: fmt.Sprintf("execution trace of the window's first %s", c.cfg.Trace)})
	if c.traceTimeline != nil {
		res.Trace = c.traceTimeline.Result(traceMaxPoints)
	}
}
