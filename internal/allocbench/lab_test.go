package allocbench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// liveForTests keeps the child runs small and quick.
const liveForTests = 16 << 20

func TestLab_Run(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the lab reads /proc")
	}
	lab := &Lab{Dir: t.TempDir(), Live: liveForTests}
	b, err := lab.Prepare(context.Background(), LocalToolchain)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.GoVersion, "go1.") {
		t.Errorf("local toolchain's version %q", b.GoVersion)
	}
	tests := []struct {
		p                Pattern
		minRatio, maxRat float64
	}{
		// Pointer-free memory fresh from the OS is not zeroed by any
		// toolchain: what the program does not write stays out of RSS.
		{Pattern{Large: true, Container: ContainerSlice, Sparse: true}, 0, 0.5},
		{Pattern{Large: true, Container: ContainerSlice}, 0.9, 1.3},
		{Pattern{Large: true, Container: ContainerChan}, 0.9, 1.3},
	}
	for _, tt := range tests {
		t.Run(tt.p.Name(), func(t *testing.T) {
			s, err := b.Run(context.Background(), tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if s.HeapAlloc < liveForTests || s.HeapAlloc > liveForTests+4<<20 {
				t.Errorf("HeapAlloc %d, want about %d", s.HeapAlloc, liveForTests)
			}
			if s.HeapSys < s.HeapInuse || s.Sys < s.HeapSys || s.HeapMapped < s.HeapSys-s.HeapReleased {
				t.Errorf("inconsistent figures: %+v", s)
			}
			if s.VmRSS < s.HeapRss {
				t.Errorf("VmRSS %d below the heap's Rss %d", s.VmRSS, s.HeapRss)
			}
			if r := s.RSSPerHeapByte(); r < tt.minRatio || r > tt.maxRat {
				t.Errorf("RSS per heap byte %.2f (heap Rss %d, HeapAlloc %d), want it in [%.1f, %.1f]", r, s.HeapRss, s.HeapAlloc, tt.minRatio, tt.maxRat)
			}
		})
	}
}

func TestBuild_Run_childFails(t *testing.T) {
	b := &Build{Toolchain: "broken", Binary: "/bin/false", lab: &Lab{}}
	_, err := b.Run(context.Background(), Pattern{Container: ContainerSlice})
	if err == nil || !strings.Contains(err.Error(), "printed no figures") {
		t.Errorf("error %v, want it to say the child printed no figures", err)
	}
}

func TestLab_RunMatrix_progress(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the lab reads /proc")
	}
	lab := &Lab{Dir: t.TempDir(), Live: liveForTests}
	var steps []Progress
	m, err := lab.RunMatrix(context.Background(), MatrixOptions{
		Toolchains: []string{LocalToolchain},
		Patterns:   []Pattern{{Container: ContainerSlice, Sparse: true}},
		Count:      2,
		Progress:   func(p Progress) { steps = append(steps, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Samples) != 2 || len(m.Failures) != 0 {
		t.Fatalf("%d samples, %d failures, want 2 and 0", len(m.Samples), len(m.Failures))
	}
	last := steps[len(steps)-1]
	if last.Total != 3 || last.Done != 3 {
		t.Errorf("last progress %+v, want 3 of 3 steps", last)
	}
	for i := 1; i < len(steps); i++ {
		if steps[i].Done < steps[i-1].Done {
			t.Errorf("progress went back: %+v after %+v", steps[i], steps[i-1])
		}
	}
}

// TestLab_Prepare_versionWithoutDownloadLines prepares the local toolchain
// through a go command that first says it is downloading a toolchain, as
// the go command does on stderr the first time a release is used: the
// version is the go command's answer alone.
func TestLab_Prepare_versionWithoutDownloadLines(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(t.TempDir(), "go")
	script := "#!/bin/sh\necho 'go: downloading go1.99.9 (linux/amd64)' >&2\nexec " + goBin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	lab := &Lab{Dir: t.TempDir(), Go: wrapper}
	b, err := lab.Prepare(t.Context(), LocalToolchain)
	if err != nil {
		t.Fatal(err)
	}
	if want := runtime.Version(); b.GoVersion != want {
		t.Errorf("GoVersion %q, want %q alone", b.GoVersion, want)
	}
}

func TestRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the lab reads /proc")
	}
	patterns := []Pattern{{Container: ContainerSlice, Sparse: true}}
	rep, m, err := Run(context.Background(), RunOptions{
		MatrixOptions: MatrixOptions{Toolchains: []string{LocalToolchain}, Patterns: patterns, Count: 2},
		Live:          liveForTests,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Samples) != 2 || len(rep.Patterns) != 1 || len(rep.Toolchains) != 1 {
		t.Fatalf("%d samples, report of %d patterns and %d toolchains; want 2, 1 and 1", len(m.Samples), len(rep.Patterns), len(rep.Toolchains))
	}

	// Interrupted before anything ran: the (empty) analysis and the
	// context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, m, err = Run(ctx, RunOptions{MatrixOptions: MatrixOptions{Toolchains: []string{LocalToolchain}, Patterns: patterns}})
	if !errors.Is(err, context.Canceled) || rep == nil || m == nil || len(m.Samples) != 0 {
		t.Errorf("interrupted: report %v, matrix %+v, error %v; want an empty report and %v", rep != nil, m, err, context.Canceled)
	}
}
