package run

import (
	"bytes"
	"crypto/sha256"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	rpprof "runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/target"
)

// busyHoard keeps 64 KiB per request and hashes 256 KiB, so that both the
// heap and the CPU profiles of a short window have samples.
type busyHoard struct {
	hoard
	buf [256 << 10]byte
}

func (h *busyHoard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.keep(64 << 10)
	// Enough hashing that it stands out in a 1 s CPU profile beside the
	// forced GCs of a growing heap, on a busy machine.
	var sum [32]byte
	for range 4 {
		sum = sha256.Sum256(h.buf[:])
	}
	w.Write(sum[:4])
}

func TestProfile_DrawsFlameGraphsAndHTMLReport(t *testing.T) {
	h := &busyHoard{}
	srv := serve(t, pprofMux(map[string]http.HandlerFunc{"/work": h.ServeHTTP}))
	res, dir, err := Profile(t.Context(), Config{
		Target:    target.Options{BaseURL: srv.URL},
		Duration:  time.Second,
		Snapshots: 3,
		CPU:       true,
		Load:      &load.Options{Targets: []load.Request{{Method: "GET", URL: srv.URL + "/work"}}, Rate: 200},
		OutDir:    t.TempDir(),
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if res.Status != result.StatusComplete {
		t.Fatalf("status %s, failures %+v", res.Status, res.Failures)
	}

	t.Run("flame graphs", func(t *testing.T) {
		want := map[string]string{
			"flame/alloc_space.svg": "(*hoard).keep",
			"flame/inuse_space.svg": "(*hoard).keep",
			"flame/cpu.svg":         "sha256",
		}
		listed := map[string]result.FlameGraph{}
		for _, f := range res.Files.Flames {
			listed[f.Path] = f
		}
		for path, fn := range want {
			f, ok := listed[path]
			if !ok {
				t.Errorf("%s not listed in result.json: %+v (warnings %v)", path, res.Files.Flames, res.Warnings)
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, f.Profile)); f.Format != "svg" || err != nil {
				t.Errorf("%s: format %q, profile %q (%v)", path, f.Format, f.Profile, err)
			}
			data, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil {
				t.Fatal(err)
			}
			if err := wellFormed(data); err != nil {
				t.Errorf("%s is not well-formed XML: %v", path, err)
			}
			if !bytes.Contains(data, []byte(fn)) {
				t.Errorf("%s does not show %s", path, fn)
			}
		}
		page, ok := listed[flameHTMLFile]
		if !ok || page.Format != "html" {
			t.Fatalf("%s not listed: %+v", flameHTMLFile, res.Files.Flames)
		}
		data, err := os.ReadFile(filepath.Join(dir, flameHTMLFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{`id="flame-alloc_space"`, `id="flame-inuse_space"`, `id="flame-cpu"`} {
			if !bytes.Contains(data, []byte(id)) {
				t.Errorf("%s has no widget %s", flameHTMLFile, id)
			}
		}
	})
	t.Run("gc pauses", func(t *testing.T) {
		ms := res.MemStats
		// The two later snapshots each forced a cycle in the window.
		if len(ms.GCPauses) != ms.GCPausesCovered || len(ms.GCPauses) < 2 {
			t.Fatalf("%d pauses listed, %d covered: want every covered cycle, at least the 2 forced", len(ms.GCPauses), ms.GCPausesCovered)
		}
		for i, p := range ms.GCPauses {
			if p.OffsetSeconds < 0 || p.OffsetSeconds > res.Window.DurationSeconds+1 {
				t.Errorf("pause %d at +%gs, outside the %gs window", i, p.OffsetSeconds, res.Window.DurationSeconds)
			}
			if p.PauseSeconds <= 0 || p.PauseSeconds > 1 {
				t.Errorf("pause %d lasted %gs", i, p.PauseSeconds)
			}
			if i > 0 && (p.Cycle != ms.GCPauses[i-1].Cycle+1 || p.End.Before(ms.GCPauses[i-1].End)) {
				t.Errorf("pause %d (cycle %d at %s) does not follow cycle %d at %s", i, p.Cycle, p.End, ms.GCPauses[i-1].Cycle, ms.GCPauses[i-1].End)
			}
		}
	})
	t.Run("report.html", func(t *testing.T) {
		if res.Files.HTMLReport != "report.html" {
			t.Fatalf("html report %q, want report.html", res.Files.HTMLReport)
		}
		data, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`id="heap-chart" data-points="3"`, `id="gc-chart"`, `<iframe id="flame-alloc_space"`, `<iframe id="flame-inuse_space"`, `<iframe id="flame-cpu"`, "(*hoard).keep"} {
			if !bytes.Contains(data, []byte(want)) {
				t.Errorf("report.html lacks %q", want)
			}
		}
		raw, _ := os.ReadFile(filepath.Join(dir, result.FileName))
		if errs := validate(result.Schema(), raw); len(errs) > 0 {
			t.Errorf("result.json does not match its schema: %v", errs)
		}
	})
}

// emptyCPUProfile returns a CPU profile without samples, written by the
// runtime: one started and stopped at once.
func emptyCPUProfile(t *testing.T) []byte {
	t.Helper()
	for range 10 {
		var buf bytes.Buffer
		if err := rpprof.StartCPUProfile(&buf); err != nil {
			t.Fatal(err)
		}
		rpprof.StopCPUProfile()
		p, err := pprofx.Parse(buf.Bytes(), pprofx.DefaultMaxDecompressed)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Sample) == 0 {
			return buf.Bytes()
		}
	}
	t.Fatal("every CPU profile had samples")
	return nil
}

func TestProfile_EmptyCPUProfileIsAWarning(t *testing.T) {
	empty := emptyCPUProfile(t)
	// The heap in use, 8 MiB of it, has samples even at the default rate.
	held := make([][]byte, 32)
	for i := range held {
		held[i] = make([]byte, 256<<10)
	}
	defer runtime.KeepAlive(held)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", func(w http.ResponseWriter, r *http.Request) {
		// An idle target: the window passes without a sample.
		time.Sleep(time.Second)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(empty)
	})
	srv := serve(t, mux)
	res, dir, err := Profile(t.Context(), Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: time.Second, CPU: true, OutDir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if res.Status != result.StatusComplete {
		t.Errorf("status %s (%+v), want complete", res.Status, res.Failures)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "cpu flame graph not drawn: profiles/cpu.pb.gz has no cpu samples") {
		t.Errorf("warnings %q do not say the cpu flame graph was not drawn", res.Warnings)
	}
	if _, err := os.Stat(filepath.Join(dir, "flame", "cpu.svg")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("flame/cpu.svg: %v, want no file", err)
	}
	for _, f := range res.Files.Flames {
		if f.SampleType == "cpu" {
			t.Errorf("a cpu flame graph is listed: %+v", f)
		}
		if _, err := os.Stat(filepath.Join(dir, f.Path)); err != nil {
			t.Errorf("listed %s: %v", f.Path, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !bytes.Contains(data, []byte(`<iframe id="flame-inuse_space"`)) || bytes.Contains(data, []byte(`<iframe id="flame-cpu"`)) {
		t.Errorf("report.html (%v) should embed the heap flame graph and no cpu one", err)
	}
}

func wellFormed(data []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		if _, err := dec.Token(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}
