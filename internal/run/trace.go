package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heapscope/heapscope/internal/atomicfile"
	"github.com/heapscope/heapscope/internal/exectrace"
	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/target"
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
		return option.Errorf("Trace", "trace %s: the pprof endpoint takes whole seconds, at least 1s", c.Trace)
	case c.Trace > c.Duration:
		return option.Errorf("Trace", "trace %s is longer than the %s window", c.Trace, c.Duration)
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

// MaxTraceFile caps a trace read whole (ReadTrace, ReadTraceFile): the
// trace reader holds a generation in memory, and a trace of a few seconds
// is a few MiB.
const MaxTraceFile = 512 << 20

// ReadTrace reads an execution trace whole from r, refusing more than
// MaxTraceFile bytes; name says what r is in errors.
func ReadTrace(r io.Reader, name string) ([]byte, error) {
	return readCapped(r, name, MaxTraceFile)
}

func readCapped(r io.Reader, name string, limit int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("read trace %s: %w", name, err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("read trace %s: larger than %d MiB; trace a shorter window", name, limit>>20)
	}
	return data, nil
}

// ReadTraceFile reads the execution trace saved at path, as ReadTrace
// does.
func ReadTraceFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	return ReadTrace(f, path)
}

// wholeSeconds checks the Duration of a trace to capture.
func wholeSeconds(d time.Duration) error {
	if d < time.Second || d%time.Second != 0 {
		return option.Errorf("Duration", "{Duration} %s: the pprof endpoint takes whole seconds, at least 1s", d)
	}
	return nil
}

// TraceSource is where an execution trace comes from: Arg is "-" for
// Stdin, a saved trace's file, or a service's base URL to capture a trace
// of Duration from, with the options of Target and the headers of Headers
// ("Name: value", target.ParseHeaders), kept in the file Save when it is
// set.
type TraceSource struct {
	Arg      string
	Stdin    io.Reader
	Target   target.Options
	Headers  []string
	Duration time.Duration
	Save     string
	// Capturing, when set, is told the service's host when a capture
	// starts; Progress is the capture's progress, Saved is told when the
	// trace is kept.
	Capturing, Saved func(string)
	Progress         func(Progress)
}

// Read reads the trace, and returns it with a name for messages and
// titles: "stdin", the file's base name, or the service's host. Its
// errors about the source's fields are *option.Error.
func (s TraceSource) Read(ctx context.Context) ([]byte, string, error) {
	if s.Arg == "-" {
		data, err := ReadTrace(s.Stdin, "stdin")
		return data, "stdin", err
	}
	if st, err := os.Stat(s.Arg); err == nil && !st.IsDir() {
		if s.Save != "" {
			return nil, "", option.Errorf("Save", "{Save} keeps a trace captured from TARGET; FILE is already saved")
		}
		data, err := ReadTraceFile(s.Arg)
		return data, filepath.Base(s.Arg), err
	}
	if !strings.Contains(s.Arg, "://") && !strings.Contains(s.Arg, ":") {
		return nil, "", fmt.Errorf("%s is neither a trace file nor a target URL such as http://127.0.0.1:6060", s.Arg)
	}
	err := wholeSeconds(s.Duration)
	if err != nil {
		return nil, "", err
	}
	o := s.Target
	o.BaseURL = s.Arg
	o.Header, err = target.ParseHeaders(s.Headers)
	if err != nil {
		return nil, "", err
	}
	c, err := target.New(o)
	if err != nil {
		return nil, "", option.Within("Target", err)
	}
	if s.Capturing != nil {
		s.Capturing(c.Host())
	}
	data, err := CaptureTrace(ctx, c, s.Duration, s.Progress)
	if err != nil {
		return nil, "", err
	}
	if s.Save != "" {
		if err := atomicfile.WriteBytes(s.Save, data); err != nil {
			return nil, "", err
		}
		if s.Saved != nil {
			s.Saved(s.Save)
		}
	}
	return data, c.Host(), nil
}

// traceProgressEvery is how often CaptureTrace reports its progress.
const traceProgressEvery = 200 * time.Millisecond

// CaptureTrace fetches an execution trace of d (whole seconds, at least
// one) from a service. progress, when not nil, is called every 200 ms
// while the service traces, with the time elapsed.
func CaptureTrace(ctx context.Context, f Fetcher, d time.Duration, progress func(Progress)) ([]byte, error) {
	if err := wholeSeconds(d); err != nil {
		return nil, err
	}
	if progress != nil {
		start := time.Now()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(traceProgressEvery)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					progress(Progress{Elapsed: min(time.Since(start), d), Total: d})
				}
			}
		})
		defer func() { close(stop); wg.Wait() }()
	}
	return f.Profile(ctx, "trace", url.Values{"seconds": {strconv.Itoa(int(d / time.Second))}})
}
