package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/run"
)

// TestDiagnose_RecordedMisuseRuns diagnoses again, as heapscope diagnose
// reads a run directory, the run of every case of the misuse suites that
// the live tests recorded (HEAPSCOPE_RECORD=1 go test -tags
// accuracy -run 'MisusesOnRealRuns' ./cmd/heapscope): real services
// making each misuse of the catalogue, and the fixed twins, profiled at
// default settings. The verdicts are judged as the live runs were, so a
// change to the diagnosis that turns one wrong fails here in seconds.
func TestDiagnose_RecordedMisuseRuns(t *testing.T) {
	for _, s := range []misuseSuite{stdlibMisuses, moduleMisuses} {
		src, err := os.ReadFile(filepath.Join("testdata", "realmodule", s.source, "main.go.txt"))
		if err != nil {
			t.Fatal(err)
		}
		// The service's source, as its runs read it: the map that keeps
		// what grows is named from its line.
		source := t.TempDir()
		if err := os.WriteFile(filepath.Join(source, "main.go"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range s.cases(t, src, "") {
			t.Run(s.source+"/"+c.dirName(), func(t *testing.T) {
				dir := filepath.Join("testdata", "recorded", s.test, c.dirName())
				_, rep, err := run.DiagnoseDir(dir, run.Diagnosis{SourceDir: source})
				if err != nil {
					t.Fatalf("%v (record the case: HEAPSCOPE_RECORD=1 go test -tags accuracy -run '%s/%s' ./cmd/heapscope)", err, s.test, c.name)
				}
				judge(t, c.judgeName(), rep.Findings, rep.Notes, c.wants...)
			})
		}
	}
}

// TestDiagnose_RecordedVerdictRuns diagnoses again the runs of the bundled
// examples that TestProfile_VerdictsAtDefaultSettings recorded
// (HEAPSCOPE_RECORD=1 go test -tags accuracy -run VerdictsAtDefaultSettings
// ./cmd/heapscope): the leaky cache under the README's profile command,
// and five runs of each fixed twin, every one quiet.
func TestDiagnose_RecordedVerdictRuns(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	diagnoseRecorded := func(t *testing.T, name string) diagnose.Report {
		t.Helper()
		_, rep, err := run.DiagnoseDir(filepath.Join("testdata", "recorded", verdictTest, name), run.Diagnosis{SourceDir: root})
		if err != nil {
			t.Fatalf("%v (record the runs: HEAPSCOPE_RECORD=1 go test -tags accuracy -run %s ./cmd/heapscope)", err, verdictTest)
		}
		return rep
	}
	t.Run("leaky", func(t *testing.T) {
		rep := diagnoseRecorded(t, "leaky")
		judgeLeaky(t, rep.Findings, rep.Notes, leakyCacheAppend(t))
	})
	for _, name := range twins {
		for round := 1; round <= twinRounds; round++ {
			t.Run(twinRunName(name, round), func(t *testing.T) {
				rep := diagnoseRecorded(t, twinRunName(name, round))
				judge(t, twinCaseName(name, round), rep.Findings, rep.Notes)
			})
		}
	}
}
