package diagnose

import (
	"cmp"
	_ "embed"
	"fmt"
	"go/version"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
	"go.yaml.in/yaml/v3"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/heapscope/heapscope/internal/humanize"
)

// regressionsYAML is the list of known regressions (regressions.yaml).
//
//go:embed regressions.yaml
var regressionsYAML []byte

// Regression is one known memory, goroutine or RSS bug of the Go
// toolchain or a module.
type Regression struct {
	ID        string         `yaml:"id"`
	Module    string         `yaml:"module"`
	Kind      string         `yaml:"kind"`
	Title     string         `yaml:"title"`
	Issue     string         `yaml:"issue"`
	Affected  []VersionRange `yaml:"affected"`
	Severity  string         `yaml:"severity"`
	Fix       string         `yaml:"fix"`
	Signature []string       `yaml:"signature"`
	Examples  struct {
		Affected   []string `yaml:"affected"`
		Unaffected []string `yaml:"unaffected"`
	} `yaml:"examples"`
	Verified string `yaml:"verified"`
}

// The kinds of Regression: what the bug makes grow.
const (
	KindMemory    = "memory"
	KindGoroutine = "goroutine"
	KindRSS       = "rss"
)

// VersionRange is [Introduced, Fixed): Fixed empty means not fixed yet.
type VersionRange struct {
	Introduced string `yaml:"introduced"`
	Fixed      string `yaml:"fixed"`
}

// Regressions returns the known regressions, parsed from the embedded
// list.
func Regressions() ([]Regression, error) {
	list, err := decodeCatalogue[Regression]("regressions.yaml", regressionsYAML)
	if err != nil {
		return nil, err
	}
	for _, r := range list {
		if r.ID == "" || r.Module == "" || r.Issue == "" || len(r.Affected) == 0 {
			return nil, fmt.Errorf("parse regressions.yaml: entry %q lacks an id, module, issue or affected range", r.ID)
		}
		switch r.Kind {
		case KindMemory, KindGoroutine, KindRSS:
		default:
			return nil, fmt.Errorf("parse regressions.yaml: entry %s: kind %q, want memory, goroutine or rss", r.ID, r.Kind)
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

// decodeCatalogue decodes an embedded YAML list strictly: a field the
// entry type does not have is an error, named with the file.
func decodeCatalogue[T any](name string, data []byte) ([]T, error) {
	var list []T
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	return list, nil
}

// FixedIn returns the version that fixes the bug for version v: the
// fixed end of the range v is in, or "" when v is not affected or no
// release fixes it.
func (r Regression) FixedIn(v string) string {
	if r.Module == "go" {
		v, _, _ = strings.Cut(v, " ")
	}
	for _, a := range r.Affected {
		if r.valid(v) && r.compare(v, a.Introduced) >= 0 && (a.Fixed == "" || r.compare(v, a.Fixed) < 0) {
			return a.Fixed
		}
	}
	return ""
}

// regressions is check 9: known bugs of the target's Go version and of
// its modules, whose versions come from the build info of a run's target
// or from the module cache paths in the profiles. When a leak or
// goroutine finding's stacks hold a bug's signature, the finding leads
// with the upgrade. An RSS bug, which shows in no stack, is a finding on
// the version alone; another bug whose version matches without its
// signature in what grows is a note.
func (d *diagnosis) regressions() {
	versions, from := d.moduleVersions()
	if len(versions) == 0 {
		if r := d.in.Run; r != nil && r.Target.Local {
			d.note("regression check: the target's Go version is unknown (no build info)")
		} else if r != nil {
			d.note("regression check: the target's Go version and modules are only known for a process on this machine, or from module paths in its profiles")
		}
		return
	}
	list, err := Regressions()
	if err != nil {
		d.note("regression check: %v", err)
		return
	}
	// Bugs that a release fixes first: when two match one finding (a
	// library and the dependency it misuses), the upgrade leads.
	slices.SortStableFunc(list, func(a, b Regression) int {
		return cmp.Compare(b2i(a.unfixed()), b2i(b.unfixed()))
	})
	led := map[int]bool{}
	for _, reg := range list {
		v, ok := versions[reg.Module]
		if !ok || !reg.Affects(v) {
			continue
		}
		name := reg.Module
		if name == "go" {
			name = "Go"
		}
		upgrade := fmt.Sprintf("upgrade %s from %s to %s", name, v, reg.FixedIn(v))
		if reg.FixedIn(v) == "" {
			upgrade = fmt.Sprintf("move off %s %s: no release fixes it", name, v)
		}
		known := fmt.Sprintf("%s, a known bug (%s): %s", upgrade, reg.Issue, strings.TrimSuffix(reg.Title, "."))
		if d.leadWithUpgrade(reg, known, upgrade, led) {
			continue
		}
		if reg.Kind != KindRSS {
			// Not in what grows: worth knowing, not a finding. A bug no
			// release fixes, with nothing of it in sight, is not said.
			if !reg.unfixed() {
				seen := "its signature is not in this run's stacks"
				if d.signatureInStacks(reg.Signature) {
					seen = "its signature is in this run's stacks, but not in what grows"
				}
				d.note("regression check: %s %s (%s) has a known %s bug (%s), %s: %s", name, v, from[reg.Module], reg.Kind, reg.Issue, seen, upgrade)
			}
			continue
		}
		sev, _ := ParseSeverity(reg.Severity)
		seen := "it shows in RSS, not in stacks"
		ev := map[string]float64{}
		if r := d.in.Run; r != nil {
			ev["rss_bytes"] = float64(r.RSS.RSSBytes)
			ev["heap_inuse_bytes"] = float64(r.MemStats.HeapInuseBytes)
		}
		title := fmt.Sprintf("%s %s (%s) has a known %s bug: %s (%s); %s", name, v, from[reg.Module], reg.Kind, reg.Title, reg.Issue, seen)
		d.add(newFinding("regression."+reg.ID, sev, site{}, title, ev, upgrade+"; "+reg.Fix, 0.9))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// unfixed reports whether a range of the bug has no fixed release.
func (r Regression) unfixed() bool {
	return slices.ContainsFunc(r.Affected, func(a VersionRange) bool { return a.Fixed == "" })
}

// MinSignatureShare is the share of a leak's sampled growth whose stacks
// must run through a known bug's signature for the leak's lead finding to
// name the bug, wherever the samples placed the lead.
const MinSignatureShare = 0.25

// leadWithUpgrade puts the upgrade first in the leak or goroutine findings
// the bug explains (explainedBy) that no other bug leads yet (led, by
// finding index), and reports whether the bug explains some finding.
func (d *diagnosis) leadWithUpgrade(reg Regression, known, upgrade string, led map[int]bool) bool {
	if reg.Kind == KindRSS {
		return false
	}
	explained, share := d.explainedBy(reg.Kind, reg.Signature)
	for _, i := range explained {
		if led[i] {
			continue
		}
		led[i] = true
		if share >= MinSignatureShare {
			d.foldLeaksInto(i, led)
		}
		f := &d.findings[i]
		// The upgrade, then the entry's own workaround: the generic
		// advice ("find what holds it") would send the user looking for a
		// map their code does not have.
		f.Fix = known + ". " + reg.Fix
		f.Title += " — " + upgrade
		f.Cause = "regression." + reg.ID
		if share > 0 {
			f.Evidence["signature_share_of_growth"] = share
		}
		if sev, err := ParseSeverity(reg.Severity); err == nil && sev > SeverityOf(*f) {
			f.Severity = sev.String()
		}
	}
	return len(explained) > 0
}

// foldLeaksInto lists under the lead leak finding lead the other leak
// findings at sites of the heap's growth that nothing else explains (led):
// when a known cause accounts for a quarter or more of the growth, they
// are what it keeps — the per-request map, the request's headers — not
// leaks of their own to bound one by one. Run removes them afterwards.
func (d *diagnosis) foldLeaksInto(lead int, led map[int]bool) {
	var parts []string
	for j := range d.findings {
		g := &d.findings[j]
		if j == lead || led[j] || d.folded[j] || g.ID != "leak.inuse-growth" {
			continue
		}
		d.folded[j] = true
		parts = append(parts, fmt.Sprintf("≈ %s at %s", humanize.Bytes(g.Evidence["site_growth_bytes"]), site{g.Function, g.File, g.Line}.where()))
	}
	if len(parts) > 0 {
		f := &d.findings[lead]
		f.Title += "; growing with it: " + strings.Join(parts, ", ")
		f.Evidence["held_sites"] = float64(len(parts))
	}
}

// explainedBy returns the indices of the findings a signature explains —
// the goroutine findings (kind goroutine) or leak findings (kind memory)
// whose own stacks hold one of its functions (for a container's finding,
// the stacks of the sites it keeps too), and the lead leak finding
// when MinSignatureShare or more of the heap's growth runs through them —
// and that share.
func (d *diagnosis) explainedBy(kind string, signature []string) ([]int, float64) {
	return d.explainedThrough(kind, signature, false)
}

// explainedByServiceCalls is explainedBy for a misuse, a call the
// service makes: a container's finding is explained by what it keeps
// only where the service's own code made it, a frame of the service's on
// the stack that runs through the signature. net/http makes a
// cancellable context per request: a cache of the service's that keeps
// what the requests read, some of it caught beside the contexts in
// flight, is no context the service leaves uncancelled.
func (d *diagnosis) explainedByServiceCalls(kind string, signature []string) ([]int, float64) {
	return d.explainedThrough(kind, signature, true)
}

// explainedThrough is explainedBy; byService asks the stacks of what a
// container keeps to hold a frame of the service's own code too.
func (d *diagnosis) explainedThrough(kind string, signature []string, byService bool) ([]int, float64) {
	if len(signature) == 0 {
		return nil, 0
	}
	share := 0.0
	if kind == KindMemory {
		share = d.growthThrough(signature)
	}
	var out []int
	leadDone := false
	for i := range d.findings {
		f := &d.findings[i]
		var stacks *profile.Profile
		leak := strings.HasPrefix(f.ID, "leak.inuse-growth") || f.ID == "leak.live-growth"
		switch {
		case leak && kind == KindMemory && len(d.in.Heap) > 0:
			stacks = d.in.Heap[len(d.in.Heap)-1].Profile
		case kind == KindGoroutine && (f.ID == "leak.goroutine-growth" || f.ID == "goroutine.pile-up") && len(d.in.Goroutines) > 0:
			stacks = d.in.Goroutines[len(d.in.Goroutines)-1].Profile
		default:
			continue
		}
		lead := leak && !leadDone && share >= MinSignatureShare
		leadDone = leadDone || leak
		at := site{f.Function, f.File, f.Line}
		// A container's finding is explained by what it keeps too.
		var through bool
		switch {
		case stacks == nil:
		case kind == KindGoroutine:
			// Most of the goroutines there wait in it: a few passing
			// through (requests in flight at the snapshot) do not.
			through = mostStacksThrough(stacks, at, signature)
		default:
			through = stacksThrough(stacks, at, signature) ||
				slices.ContainsFunc(d.holds[at], func(held site) bool {
					if byService {
						return d.serviceStacksThrough(stacks, held, signature)
					}
					return stacksThrough(stacks, held, signature)
				})
		}
		if lead || through {
			out = append(out, i)
		}
	}
	return out, share
}

// growthThrough returns the share of the heap's sampled growth, first to
// last snapshot, in stacks that hold one of the functions.
func (d *diagnosis) growthThrough(functions []string) float64 {
	var through, total float64
	for _, st := range d.growingStacks {
		g := st.ys[1] - st.ys[0]
		if g <= 0 {
			continue
		}
		total += g
		if keyHolds(st.key(), functions) {
			through += g
		}
	}
	if total == 0 {
		return 0
	}
	return through / total
}

// signatureInStacks reports whether a stack of the last heap or goroutine
// profile holds one of the functions.
func (d *diagnosis) signatureInStacks(functions []string) bool {
	for _, ps := range [][]Profile{d.in.Heap, d.in.Goroutines} {
		if len(ps) == 0 || ps[len(ps)-1].Profile == nil {
			continue
		}
		for _, fn := range ps[len(ps)-1].Profile.Function {
			if inSignature(functions, fn.Name) {
				return true
			}
		}
	}
	return false
}

// keyHolds reports whether a stack key (stackKey) holds one of the
// functions.
func keyHolds(key string, functions []string) bool {
	for line := range strings.SplitSeq(key, "\n") {
		fn, _, _ := strings.Cut(line, " ")
		if inSignature(functions, fn) {
			return true
		}
	}
	return false
}

// mostStacksThrough reports whether half or more of the count (the first
// value) of the stacks of p through at hold one of the functions.
func mostStacksThrough(p *profile.Profile, at site, functions []string) bool {
	var holds, total int64
	for _, s := range p.Sample {
		if len(s.Value) == 0 {
			continue
		}
		fs := frames(s)
		if !slices.ContainsFunc(fs, func(f frame) bool { return f.site() == at }) {
			continue
		}
		total += s.Value[0]
		if slices.ContainsFunc(fs, func(f frame) bool { return inSignature(functions, f.function) }) {
			holds += s.Value[0]
		}
	}
	return total > 0 && 2*holds >= total
}

// stacksThrough reports whether a stack of p that passes through at holds
// one of the functions.
func stacksThrough(p *profile.Profile, at site, functions []string) bool {
	for _, s := range p.Sample {
		fs := frames(s)
		through, holds := false, false
		for _, f := range fs {
			through = through || f.site() == at
			holds = holds || inSignature(functions, f.function)
		}
		if through && holds {
			return true
		}
	}
	return false
}

// serviceStacksThrough is stacksThrough for stacks that also hold a frame
// of the service's own code.
func (d *diagnosis) serviceStacksThrough(p *profile.Profile, at site, functions []string) bool {
	for _, s := range p.Sample {
		through, holds, own := false, false, false
		for _, f := range frames(s) {
			through = through || f.site() == at
			holds = holds || inSignature(functions, f.function)
			own = own || d.app.own(f)
		}
		if through && holds && own {
			return true
		}
	}
	return false
}

// inSignature reports whether fn is one of the functions of a signature.
// A signature names a generic function with its type arguments elided
// (expirable.NewLRU[...]), as it is written whatever it is instantiated
// with; a profile names it with its shapes
// (expirable.NewLRU[go.shape.string,go.shape.int]). It allocates
// nothing: it runs for every frame of every sample, for every entry.
func inSignature(functions []string, fn string) bool {
	generic := strings.IndexByte(fn, '[') >= 0
	for _, sig := range functions {
		if sig == fn || generic && elidedIs(fn, sig) {
			return true
		}
	}
	return false
}

// elidedIs reports whether fn, each outermost bracketed list of its type
// arguments written [...], is sig.
func elidedIs(fn, sig string) bool {
	const elided = "[...]"
	i := 0
	for j := 0; j < len(fn); j++ {
		if fn[j] != '[' {
			if i == len(sig) || sig[i] != fn[j] {
				return false
			}
			i++
			continue
		}
		if !strings.HasPrefix(sig[i:], elided) {
			return false
		}
		i += len(elided)
		for depth := 0; j < len(fn); j++ {
			if fn[j] == '[' {
				depth++
			} else if fn[j] == ']' {
				if depth--; depth == 0 {
					break
				}
			}
		}
	}
	return i == len(sig)
}

// moduleVersions returns the versions of Go and of the modules the target
// runs, by module path ("go" for the toolchain), and where each was read.
func (d *diagnosis) moduleVersions() (versions, from map[string]string) {
	versions, from = map[string]string{}, map[string]string{}
	if r := d.in.Run; r != nil && r.Target.GoVersion != "" {
		versions["go"], from["go"] = r.Target.GoVersion, "build info"
		for _, m := range r.Target.Dependencies {
			versions[m.Path], from[m.Path] = m.Version, "build info"
		}
	}
	var profiles []*profile.Profile
	for _, ps := range [][]Profile{d.in.Heap, d.in.Goroutines, d.in.Contention} {
		if len(ps) > 0 {
			profiles = append(profiles, ps[len(ps)-1].Profile)
		}
	}
	profiles = append(profiles, d.in.CPU, d.in.Allocs)
	for _, p := range profiles {
		if p == nil {
			continue
		}
		for _, fn := range p.Function {
			path, v, ok := ModuleOfFile(fn.Filename)
			if ok && versions[path] == "" {
				versions[path], from[path] = v, "module path in the profiles"
			}
		}
	}
	return versions, from
}

// ModuleOfFile reads the module and version from a source path in the
// module cache, ".../pkg/mod/github.com/!shopify/sarama@v1.36.0/broker.go"
// → github.com/Shopify/sarama, v1.36.0. ok is false for paths outside it.
func ModuleOfFile(file string) (path, version string, ok bool) {
	_, rest, found := strings.Cut(file, "/pkg/mod/")
	if !found {
		return "", "", false
	}
	at := strings.Index(rest, "@")
	if at <= 0 {
		return "", "", false
	}
	escPath, escVersion := rest[:at], rest[at+1:]
	if slash := strings.IndexByte(escVersion, '/'); slash >= 0 {
		escVersion = escVersion[:slash]
	}
	path, err := module.UnescapePath(escPath)
	if err != nil {
		return "", "", false
	}
	version, err = module.UnescapeVersion(escVersion)
	if err != nil || !semver.IsValid(version) {
		return "", "", false
	}
	return path, version, true
}
