package run

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/target"
)

// parker answers every request and, when leaking, leaves a goroutine
// behind that waits on a channel nobody sends on until the test ends.
type parker struct {
	leak    bool
	release chan struct{}
}

func (p *parker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.leak {
		go p.wait()
	}
	w.Write([]byte("ok"))
}

func (p *parker) wait() {
	<-p.release // parked: the goroutine leak
}

func goroutineLeaks(fs []result.Finding) []result.Finding {
	var out []result.Finding
	for _, f := range fs {
		if f.ID == "leak.goroutine-growth" {
			out = append(out, f)
		}
	}
	return out
}

func TestProfile_GoroutineSeriesFindsLeak(t *testing.T) {
	// The receive is on the line after wait's declaration.
	entry := reflect.ValueOf((*parker).wait).Pointer()
	_, declared := runtime.FuncForPC(entry).FileLine(entry)
	parked := int64(declared) + 1
	tests := []struct {
		name string
		leak bool
	}{
		{name: "leaking handler", leak: true},
		{name: "steady handler", leak: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &parker{leak: tt.leak, release: make(chan struct{})}
			t.Cleanup(func() { close(p.release) })
			srv := serve(t, pprofMux(map[string]http.HandlerFunc{"/work": p.ServeHTTP}))
			const snapshots = 4
			res, dir, err := Profile(t.Context(), Config{
				Target:    target.Options{BaseURL: srv.URL},
				Duration:  1500 * time.Millisecond,
				Snapshots: snapshots,
				Load:      &load.Options{Targets: []load.Request{{Method: "GET", URL: srv.URL + "/work"}}, Rate: 60},
				OutDir:    t.TempDir(),
				Version:   "test",
			})
			if err != nil {
				t.Fatalf("Profile: %v", err)
			}
			if res.Status != result.StatusComplete {
				t.Fatalf("status %s, failures %+v", res.Status, res.Failures)
			}

			var series int
			for _, pr := range res.Profiles {
				if pr.Kind == "goroutine" && strings.HasPrefix(pr.Path, "profiles/goroutine-") {
					series++
					if _, err := os.Stat(filepath.Join(dir, pr.Path)); err != nil {
						t.Errorf("goroutine profile %s listed but not written: %v", pr.Path, err)
					}
				}
			}
			if series != snapshots {
				t.Errorf("%d goroutine profiles of the series in result.json, want one per heap snapshot (%d)", series, snapshots)
			}

			_, again, err := DiagnoseDir(dir, Diagnosis{})
			if err != nil {
				t.Fatalf("DiagnoseDir: %v", err)
			}
			for _, got := range [][]result.Finding{res.Findings, again.Findings} {
				leaks := goroutineLeaks(got)
				if !tt.leak {
					if len(leaks) > 0 {
						t.Errorf("steady target: goroutine leak findings %+v; notes %v", leaks, res.DiagnosisNotes)
					}
					continue
				}
				if len(leaks) != 1 {
					t.Fatalf("want one goroutine leak finding, got %+v; notes %v", leaks, res.DiagnosisNotes)
				}
				f := leaks[0]
				if filepath.Base(f.File) != "goroutines_test.go" || f.Line != parked || !strings.HasSuffix(f.Function, "run.(*parker).wait") {
					t.Errorf("leak at %s (%s:%d), want (*parker).wait at goroutines_test.go:%d", f.Function, f.File, f.Line, parked)
				}
				if !strings.Contains(f.Title, "blocked receiving from a channel") || !strings.Contains(f.Fix, "runtime.chanrecv") {
					t.Errorf("title %q / fix %q do not say where the goroutines wait", f.Title, f.Fix)
				}
				if f.Severity != "high" || f.Evidence["last_goroutines"]-f.Evidence["first_goroutines"] < 30 {
					t.Errorf("severity %s, evidence %v: want high, with the ~90 parked goroutines counted", f.Severity, f.Evidence)
				}
			}
			if !tt.leak && !strings.Contains(strings.Join(res.DiagnosisNotes, "\n"), "goroutines grow steadily across 4 profiles") {
				t.Errorf("steady target: the notes do not say the goroutine check ran over the series: %v", res.DiagnosisNotes)
			}
		})
	}
}
