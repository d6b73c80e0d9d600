//go:build accuracy

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/atomicfile"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
)

// TestProfile_MisusesOnRealRuns proves each entry of the misuse catalogue
// (internal/diagnose/misuses.yaml) on a real service that makes the
// mistake, profiled at default settings: the finding leads with the
// misuse's cause and the fix in the service's code, not with advice about
// the library's internals.
func TestProfile_MisusesOnRealRuns(t *testing.T) { profileMisuseSuite(t, stdlibMisuses) }

// TestProfile_ModuleMisusesOnRealRuns proves the entries of the misuse
// catalogue that are misuses of public modules, on a real service built
// on them at real versions from the module proxy, with the fixed twin of
// each as a control that must stay quiet.
func TestProfile_ModuleMisusesOnRealRuns(t *testing.T) { profileMisuseSuite(t, moduleMisuses) }

// recordEnv names the variable that makes the live verdict tests record
// the run of every case they judge right into testdata/recorded, for
// TestDiagnose_RecordedMisuseRuns and TestDiagnose_RecordedVerdictRuns.
const recordEnv = "HEAPSCOPE_RECORD"

// profileMisuseSuite builds the suite's service, profiles each case for
// 10 s (30 s at most) under its load, and judges the runs.
func profileMisuseSuite(t *testing.T, s misuseSuite) {
	src, err := os.ReadFile(filepath.Join("testdata", "realmodule", s.source, "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	buildDir := t.TempDir()
	bin, err := buildModule(t.Context(), buildDir, s.module, src, s.require)
	if err != nil {
		t.Fatalf("build the service: %v", err)
	}
	upstream, err := startService(t, bin, "-mode", s.upstreamMode)
	if err != nil {
		t.Fatal(err)
	}
	record := os.Getenv(recordEnv) != ""
	// Each case takes a core's share with its service and its load: at
	// most s.slots at a time, or a starved run would judge the machine,
	// not the misuse.
	slots := make(chan struct{}, s.slots)
	for _, c := range s.cases(t, src, upstream) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			dir, err := profileMisuse(t, bin, s.load, c)
			<-slots
			if err != nil {
				t.Fatal(err)
			}
			res, err := rundir.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			judge(t, c.judgeName(), res.Findings, res.DiagnosisNotes, c.wants...)
			t.Logf("%s: window %.0f s", c.name, res.Window.DurationSeconds)
			if record && !t.Failed() {
				to := filepath.Join("testdata", "recorded", s.test, c.dirName())
				if err := recordRun(dir, to, machinePaths(buildDir, bin, s.module)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// profileMisuse starts the service bin with the case's flags and profiles
// it for 10 s (30 s at most) under load at the case's rate. It returns
// the run directory.
func profileMisuse(t *testing.T, bin, load string, c misuseCase) (string, error) {
	url, err := startService(t, bin, c.args...)
	if err != nil {
		return "", err
	}
	out := t.TempDir()
	got := heapscopeIn(t, "", "profile", url, "--out", out, "--format", "json",
		"--duration", "10s", "--max-duration", "30s", "--load", load, "--rate", c.rate)
	if got.code != exitOK {
		return "", fmt.Errorf("profile %s: exit %d\nstderr: %s", url, got.code, got.stderr)
	}
	dir, err := onlyRunDir(out)
	if err != nil {
		return "", fmt.Errorf("profile %s: %w", url, err)
	}
	return dir, nil
}

// onlyRunDir is the one run directory heapscope profile wrote under out.
func onlyRunDir(out string) (string, error) {
	found, err := filepath.Glob(filepath.Join(out, "*", result.FileName))
	if err != nil || len(found) != 1 {
		return "", fmt.Errorf("%d run directories in %s, want 1 (%v)", len(found), out, err)
	}
	return filepath.Dir(found[0]), nil
}

// machinePaths rewrites the paths of this machine that a run of the
// service built in buildDir names to what -trimpath would have written:
// the toolchain's and the module cache's files by their import paths, the
// service's by its module's.
func machinePaths(buildDir, bin, module string) *strings.Replacer {
	return strings.NewReplacer(
		filepath.Join(goEnv("GOROOT"), "src")+"/", "",
		goEnv("GOMODCACHE")+"/", "",
		bin, "svc",
		buildDir+"/", module+"/",
	)
}

// recordRun copies what heapscope diagnose reads of the run directory
// from — its result.json (without the findings, which are diagnosed
// again), memstats.json and profiles — to the directory to, with the
// paths of this machine rewritten by paths, and fails if one is left.
func recordRun(from, to string, paths *strings.Replacer) error {
	res, err := rundir.Read(from)
	if err != nil {
		return err
	}
	res.Findings, res.DiagnosisNotes, res.Top = nil, nil, nil
	res.Files = result.RunDirectory{MemStats: res.Files.MemStats}
	if err := os.RemoveAll(to); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(to, "profiles"), 0o755); err != nil {
		return err
	}
	write := func(name string, data []byte) error {
		return atomicfile.Write(filepath.Join(to, name), func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		})
	}
	writeText := func(name, text string) error {
		if leak := machinePathIn(text); leak != "" {
			return fmt.Errorf("record %s: %s still names %s", from, name, leak)
		}
		return write(name, []byte(text))
	}
	for _, pr := range res.Profiles {
		data, err := os.ReadFile(filepath.Join(from, pr.Path))
		if err != nil {
			return err
		}
		p, err := pprofx.Parse(data, pprofx.DefaultMaxDecompressed)
		if err != nil {
			return fmt.Errorf("record %s: %w", pr.Path, err)
		}
		for _, fn := range p.Function {
			fn.Filename = paths.Replace(fn.Filename)
			if leak := machinePathIn(fn.Filename); leak != "" {
				return fmt.Errorf("record %s: %s: function %s still names %s", from, pr.Path, fn.Name, leak)
			}
		}
		for _, m := range p.Mapping {
			m.File = paths.Replace(m.File)
		}
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			return err
		}
		if err := write(pr.Path, buf.Bytes()); err != nil {
			return err
		}
	}
	if name := res.Files.MemStats; name != "" {
		data, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			return err
		}
		if err := writeText(name, paths.Replace(string(data))); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return writeText(result.FileName, paths.Replace(string(data))+"\n")
}

// machinePathIn returns the first path of this machine's temporary or
// home directory that text names, or "".
func machinePathIn(text string) string {
	home, _ := os.UserHomeDir()
	for _, dir := range []string{os.TempDir(), home} {
		if dir != "" && strings.Contains(text, dir+"/") {
			return dir + "/"
		}
	}
	return ""
}
