package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heapscope/heapscope/internal/exectrace"
	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/target"
)

func TestProfile_Trace(t *testing.T) {
	h := &hoard{}
	mux := pprofMux(map[string]http.HandlerFunc{"/debug/pprof/trace": pprof.Trace})
	srv := serve(t, mux)
	// Allocation during the window, so that the trace holds GC cycles:
	// the snapshots force some, and the hoard grows the heap.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				h.keep(256 << 10)
			}
		}
	}()
	defer func() { close(stop); <-done }()

	res, dir, err := Profile(t.Context(), Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: 1500 * time.Millisecond, Trace: time.Second,
		OutDir: t.TempDir(), Version: "test",
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if res.Status != result.StatusComplete {
		t.Fatalf("status %s, failures %+v", res.Status, res.Failures)
	}
	if res.Trace == nil {
		t.Fatal("no trace timeline in the result")
	}
	if s := res.Trace.Summary; s.Cycles == 0 || s.GCShare < 0 || s.GCShare > 1 || s.DurationSeconds < 0.5 {
		t.Errorf("trace summary %+v: want cycles over about a second, GC share in [0,1]", s)
	}
	if len(res.Trace.Heap) == 0 || len(res.Trace.Heap) > traceMaxPoints {
		t.Errorf("%d heap points, want 1 to %d", len(res.Trace.Heap), traceMaxPoints)
	}
	var listed bool
	for _, p := range res.Profiles {
		listed = listed || (p.Kind == "trace" && p.Path == traceFile)
	}
	if !listed {
		t.Errorf("profiles %+v do not list %s", res.Profiles, traceFile)
	}
	raw, err := os.ReadFile(filepath.Join(dir, traceFile))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := exectrace.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the kept trace does not read: %v", err)
	}
	if got := tl.Result(traceMaxPoints).Summary; got != res.Trace.Summary {
		t.Errorf("the kept trace gives %+v, result.json %+v", got, res.Trace.Summary)
	}
	doc, err := os.ReadFile(filepath.Join(dir, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if errs := validate(result.Schema(), doc); len(errs) > 0 {
		t.Errorf("result.json does not match the schema: %v", errs)
	}
	var back result.Run
	if err := json.Unmarshal(doc, &back); err != nil || back.Trace == nil {
		t.Errorf("result.json holds no trace (%v)", err)
	}
}

func TestConfig_Validate_trace(t *testing.T) {
	tests := []struct {
		trace time.Duration
		want  string
	}{
		{1500 * time.Millisecond, "whole seconds"},
		{500 * time.Millisecond, "whole seconds"},
		{5 * time.Second, "longer than the 2s window"},
	}
	for _, tt := range tests {
		t.Run(tt.trace.String(), func(t *testing.T) {
			c := Config{Target: target.Options{BaseURL: "http://127.0.0.1:1"}, Duration: 2 * time.Second, Trace: tt.trace}
			err := c.prepare()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestReadTraceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.out")
	os.WriteFile(path, []byte("trace bytes"), 0o644)
	if data, err := ReadTraceFile(path); err != nil || string(data) != "trace bytes" {
		t.Errorf("ReadTraceFile = %q, %v", data, err)
	}
	if _, err := ReadTraceFile(filepath.Join(dir, "missing")); err == nil || !strings.HasPrefix(err.Error(), "open trace: ") {
		t.Errorf("a missing file: error %v", err)
	}
	if _, err := readCapped(strings.NewReader(strings.Repeat("x", 3<<20)), "big.out", 2<<20); err == nil ||
		err.Error() != "read trace big.out: larger than 2 MiB; trace a shorter window" {
		t.Errorf("a trace over the limit: error %v", err)
	}
	if data, err := readCapped(strings.NewReader(strings.Repeat("x", 2<<20)), "big.out", 2<<20); err != nil || len(data) != 2<<20 {
		t.Errorf("a trace at the limit: %d bytes, %v", len(data), err)
	}
}

// traceFetcher serves a trace, recording what it was asked.
type traceFetcher struct {
	Fetcher
	query url.Values
	wait  time.Duration
}

func (f *traceFetcher) Profile(ctx context.Context, name string, query url.Values) ([]byte, error) {
	f.query = query
	time.Sleep(f.wait)
	return []byte(name), nil
}

// TestCaptureTrace runs in a synctest bubble: the fetch takes 500 ms of
// the bubble's clock, so progress comes at 200 and 400 ms, exactly,
// however busy the machine.
func TestCaptureTrace(t *testing.T) {
	synctest.Test(t, testCaptureTrace)
}

func testCaptureTrace(t *testing.T) {
	f := &traceFetcher{wait: 500 * time.Millisecond}
	var calls []Progress
	data, err := CaptureTrace(t.Context(), f, 2*time.Second, func(p Progress) { calls = append(calls, p) })
	if err != nil || string(data) != "trace" {
		t.Fatalf("CaptureTrace = %q, %v", data, err)
	}
	if got := f.query.Get("seconds"); got != "2" {
		t.Errorf("asked for seconds=%q, want 2", got)
	}
	want := []Progress{{Elapsed: 200 * time.Millisecond, Total: 2 * time.Second}, {Elapsed: 400 * time.Millisecond, Total: 2 * time.Second}}
	if !slices.Equal(calls, want) {
		t.Errorf("progress %+v, want %+v: a call every 200 ms of the 500 ms fetch", calls, want)
	}
	time.Sleep(2 * traceProgressEvery)
	if len(calls) != len(want) {
		t.Error("progress reported after CaptureTrace returned")
	}
	for _, d := range []time.Duration{0, 1500 * time.Millisecond} {
		if _, err := CaptureTrace(t.Context(), f, d, nil); err == nil || !strings.Contains(err.Error(), "whole seconds") {
			t.Errorf("trace of %s: error %v", d, err)
		}
	}
}

func TestTraceSource_Read(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "trace.out")
	if err := os.WriteFile(file, []byte("saved trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/trace" || r.URL.Query().Get("seconds") != "1" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("captured trace"))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	save := filepath.Join(dir, "kept.out")
	tests := []struct {
		name      string
		src       TraceSource
		data, who string
		field     string // of the *option.Error wanted
		wantErr   string
	}{
		{name: "stdin", src: TraceSource{Arg: "-", Stdin: strings.NewReader("piped trace")}, data: "piped trace", who: "stdin"},
		{name: "file", src: TraceSource{Arg: file}, data: "saved trace", who: "trace.out"},
		{name: "capture", src: TraceSource{Arg: srv.URL, Duration: time.Second, Save: save}, data: "captured trace", who: host},
		{name: "file kept again", src: TraceSource{Arg: file, Save: save}, field: "Save", wantErr: "Save keeps a trace captured from TARGET; FILE is already saved"},
		{name: "neither", src: TraceSource{Arg: filepath.Join(dir, "missing.out")}, wantErr: "is neither a trace file nor a target URL"},
		{name: "part of a second", src: TraceSource{Arg: srv.URL, Duration: 1500 * time.Millisecond}, field: "Duration", wantErr: "Duration 1.5s: the pprof endpoint takes whole seconds, at least 1s"},
		{name: "bad target options", src: TraceSource{Arg: srv.URL, Duration: time.Second, Target: target.Options{Timeout: -1}}, field: "Target.Timeout", wantErr: "Target.Timeout -1ns: give a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var said []string
			tt.src.Capturing = func(h string) { said = append(said, "capturing "+h) }
			tt.src.Saved = func(p string) { said = append(said, "saved "+p) }
			data, who, err := tt.src.Read(t.Context())
			if tt.wantErr != "" {
				var oe *option.Error
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.As(err, &oe) != (tt.field != "") || oe != nil && oe.Field != tt.field {
					t.Fatalf("Read() error %v, want %q (an option error about %q)", err, tt.wantErr, tt.field)
				}
				return
			}
			if err != nil || string(data) != tt.data || who != tt.who {
				t.Fatalf("Read() = %q, %q, %v; want %q from %q", data, who, err, tt.data, tt.who)
			}
			if tt.src.Save == "" {
				return
			}
			if kept, err := os.ReadFile(save); err != nil || string(kept) != tt.data {
				t.Errorf("kept %q, %v; want the captured trace", kept, err)
			}
			if want := []string{"capturing " + host, "saved " + save}; !slices.Equal(said, want) {
				t.Errorf("told %q, want %q", said, want)
			}
		})
	}
}
