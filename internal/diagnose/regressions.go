package diagnose

import (
	_ "embed"
	"fmt"
	"go/version"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/mod/semver"
)

// regressionsYAML is the list of known regressions (regressions.yaml).
//
//go:embed regressions.yaml
var regressionsYAML []byte

// Regression is one known memory regression of the Go toolchain or a
// module.
type Regression struct {
	ID       string         `yaml:"id"`
	Module   string         `yaml:"module"`
	Title    string         `yaml:"title"`
	Issue    string         `yaml:"issue"`
	Affected []VersionRange `yaml:"affected"`
	Severity string         `yaml:"severity"`
	Fix      string         `yaml:"fix"`
	Examples struct {
		Affected   []string `yaml:"affected"`
		Unaffected []string `yaml:"unaffected"`
	} `yaml:"examples"`
}

// VersionRange is [Introduced, Fixed): Fixed empty means not fixed yet.
type VersionRange struct {
	Introduced string `yaml:"introduced"`
	Fixed      string `yaml:"fixed"`
}

// Regressions returns the known regressions, parsed from the embedded
// list.
func Regressions() ([]Regression, error) {
	var list []Regression
	dec := yaml.NewDecoder(strings.NewReader(string(regressionsYAML)))
	dec.KnownFields(true)
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("parse regressions.yaml: %w", err)
	}
	for _, r := range list {
		if r.ID == "" || r.Module == "" || r.Issue == "" || len(r.Affected) == 0 {
			return nil, fmt.Errorf("parse regressions.yaml: entry %q lacks an id, module, issue or affected range", r.ID)
		}
		if _, err := ParseSeverity(r.Severity); err != nil {
			return nil, fmt.Errorf("parse regressions.yaml: entry %s: %w", r.ID, err)
		}
		for _, a := range r.Affected {
			if !r.valid(a.Introduced) || a.Fixed != "" && !r.valid(a.Fixed) {
				return nil, fmt.Errorf("parse regressions.yaml: entry %s: bad range %s–%s", r.ID, a.Introduced, a.Fixed)
			}
		}
	}
	return list, nil
}

func (r Regression) valid(v string) bool {
	if r.Module == "go" {
		return version.IsValid(v)
	}
	return semver.IsValid(v)
}

func (r Regression) compare(a, b string) int {
	if r.Module == "go" {
		return version.Compare(a, b)
	}
	return semver.Compare(a, b)
}

// Affects reports whether version v of the regression's module is in one
// of its affected ranges. Versions it cannot read are not affected.
func (r Regression) Affects(v string) bool {
	if r.Module == "go" {
		// "go1.24.3 X:nodwarf5" and the like: the version is the first
		// word.
		v, _, _ = strings.Cut(v, " ")
	}
	if !r.valid(v) {
		return false
	}
	for _, a := range r.Affected {
		if r.compare(v, a.Introduced) >= 0 && (a.Fixed == "" || r.compare(v, a.Fixed) < 0) {
			return true
		}
	}
	return false
}

// regressions is check 9: known regressions of the target's Go version
// and modules.
func (d *diagnosis) regressions() {
	r := d.in.Run
	if r == nil {
		return
	}
	if r.Target.GoVersion == "" {
		if r.Target.Local {
			d.note("regression check: the target's Go version is unknown (no build info)")
		} else {
			d.note("regression check: the target's Go version and modules are only known for a process on this machine")
		}
		return
	}
	list, err := Regressions()
	if err != nil {
		d.note("regression check: %v", err)
		return
	}
	versions := map[string]string{"go": r.Target.GoVersion}
	for _, m := range r.Target.Dependencies {
		versions[m.Path] = m.Version
	}
	for _, reg := range list {
		v, ok := versions[reg.Module]
		if !ok || !reg.Affects(v) {
			continue
		}
		sev, _ := ParseSeverity(reg.Severity)
		ev := map[string]float64{
			"rss_bytes":        float64(r.RSS.RSSBytes),
			"heap_inuse_bytes": float64(r.MemStats.HeapInuseBytes),
		}
		name := reg.Module
		if name == "go" {
			name = "Go"
		}
		title := fmt.Sprintf("%s %s has a known memory regression: %s (%s)", name, v, reg.Title, reg.Issue)
		d.add(newFinding("regression."+reg.ID, sev, site{}, title, ev, reg.Fix, 0.9))
	}
}
