package diagnose

import (
	"testing"

	"github.com/heapscope/heapscope/internal/result"
)

// TestRegressions_eachEntry checks every entry of regressions.yaml
// against the versions it lists as affected and unaffected, and that a
// run with an affected version gets the finding.
func TestRegressions_eachEntry(t *testing.T) {
	list, err := Regressions()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		t.Fatal("no regressions listed")
	}
	for _, reg := range list {
		t.Run(reg.ID, func(t *testing.T) {
			if len(reg.Examples.Affected) == 0 || len(reg.Examples.Unaffected) == 0 {
				t.Fatal("the entry lists no affected or no unaffected example versions")
			}
			for _, v := range reg.Examples.Affected {
				if !reg.Affects(v) {
					t.Errorf("Affects(%s) = false, want true", v)
				}
			}
			for _, v := range reg.Examples.Unaffected {
				if reg.Affects(v) {
					t.Errorf("Affects(%s) = true, want false", v)
				}
			}
			for _, a := range reg.Affected {
				if a.Fixed != "" && reg.Affects(a.Fixed) {
					t.Errorf("the fixed version %s is affected", a.Fixed)
				}
				if !reg.Affects(a.Introduced) {
					t.Errorf("the introducing version %s is not affected", a.Introduced)
				}
			}
			run := &result.Run{Target: result.Target{Local: true}}
			if reg.Module == "go" {
				run.Target.GoVersion = reg.Examples.Affected[0]
			} else {
				run.Target.GoVersion = "go1.26.0"
				run.Target.Dependencies = []result.Module{{Path: reg.Module, Version: reg.Examples.Affected[0]}}
			}
			rep := Run(Input{Run: run})
			if !hasFinding(rep.Findings, "regression."+reg.ID) {
				t.Errorf("a run of %s %s has no regression.%s finding: %+v", reg.Module, reg.Examples.Affected[0], reg.ID, rep.Findings)
			}
			run.Target.GoVersion = reg.Examples.Unaffected[0]
			run.Target.Dependencies = nil
			if hasFinding(Run(Input{Run: run}).Findings, "regression."+reg.ID) {
				t.Errorf("a run of %s has the regression.%s finding", reg.Examples.Unaffected[0], reg.ID)
			}
		})
	}
}

func TestRegression_AffectsOddVersions(t *testing.T) {
	reg := Regression{Module: "go", Affected: []VersionRange{{Introduced: "go1.24.0", Fixed: "go1.24.6"}}}
	for v, want := range map[string]bool{
		"go1.24.3 X:nodwarf5": true,
		"devel +abc":          false,
		"":                    false,
		"1.24.3":              false,
		"go1.24rc1":           false,
	} {
		if got := reg.Affects(v); got != want {
			t.Errorf("Affects(%q) = %v, want %v", v, got, want)
		}
	}
}

func hasFinding(fs []result.Finding, id string) bool {
	for _, f := range fs {
		if f.ID == id {
			return true
		}
	}
	return false
}
