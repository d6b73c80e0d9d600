package diagnose

import (
	_ "embed"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// misusesYAML is the catalogue of misuses (misuses.yaml).
//
//go:embed misuses.yaml
var misusesYAML []byte

// Misuse is a way of using the standard library or a common module that
// makes memory or goroutines grow, with the signature it leaves in the
// profiles.
type Misuse struct {
	ID string `yaml:"id"`
	// Goroutines and Memory are its signatures: functions on the stacks
	// of the goroutines, and of the memory, that grow.
	Goroutines []string `yaml:"goroutines"`
	Memory     []string `yaml:"memory"`
	// Calls are the library's entry points the service's code calls to
	// make the misuse (http.Get, context.WithTimeout): the finding names
	// the service's line that calls one, on the stacks of any profile.
	Calls []string `yaml:"calls"`
	// WhenWaitingIn, when given, are functions on the stacks of growing
	// goroutines without which the entry does not hold: the rest of its
	// signature is what another misuse leaves too (the connections of a
	// client that waits for ever for its answers, and of one whose
	// bodies stay open; only the first has requests waiting).
	WhenWaitingIn []string `yaml:"when_waiting_in"`
	// InServiceCode says the signature is a language or runtime primitive
	// (a channel operation, a lock) that only the service's own code
	// misuses this way: the entry explains a finding only where the
	// service's code makes the call, not a library's goroutines waiting
	// in it by design.
	InServiceCode bool `yaml:"in_service_code"`
	// Keeps, when given, are functions that allocate only to add to what
	// the library keeps for the life of what they were called on (a
	// logger's hooks, a registry's series, a scheduler's entries): calls
	// of them in the window, while the live heap grows, place the growth
	// where too few samples of it do.
	Keeps []string `yaml:"keeps"`
	Name  string   `yaml:"name"`
	Cause string   `yaml:"cause"`
	Fix   string   `yaml:"fix"`
	// Source is where the library documents the rule the misuse breaks,
	// or the issue that reports it.
	Source string `yaml:"source"`
	Proven string `yaml:"proven"`
}

// Misuses returns the catalogue of misuses, parsed from the embedded list.
func Misuses() ([]Misuse, error) {
	list, err := misuseCatalogue()
	return slices.Clone(list), err
}

// misuseCatalogue is the parsed catalogue, decoded once for every
// diagnosis; its entries are read, never changed.
var misuseCatalogue = sync.OnceValues(func() ([]Misuse, error) {
	list, err := decodeCatalogue[Misuse]("misuses.yaml", misusesYAML)
	if err != nil {
		return nil, err
	}
	for _, m := range list {
		if m.ID == "" || len(m.Goroutines)+len(m.Memory) == 0 || len(m.Calls) == 0 || m.Name == "" || m.Cause == "" || m.Fix == "" || !strings.HasPrefix(m.Source, "https://") || m.Proven == "" {
			return nil, fmt.Errorf("parse misuses.yaml: entry %q lacks an id, a signature, the calls that make it, a name, a cause, a fix, its source link or the test that proves it", m.ID)
		}
	}
	return list, nil
})

// misuses is check 10: a leak or goroutine finding that a known misuse
// explains (explainedBy: its stacks hold the misuse's signature — for
// goroutines, most of those at its site do — and, for an entry with
// when_waiting_in, growing goroutines wait in one of those) leads
// with the cause and the fix in the user's code. A finding a known bug
// already explains keeps the upgrade first.
func (d *diagnosis) misuses() {
	list, err := misuseCatalogue()
	if err != nil {
		d.note("misuse check: %v", err)
		return
	}
	for _, m := range list {
		var goroutines, memory []int
		var share float64
		// Most entries' functions are in no profile of the input: a
		// look at the profiles' function tables rules them out before
		// any stack is walked.
		if d.signatureInStacks(m.Goroutines) || d.signatureInStacks(m.Memory) {
			goroutines, _ = d.explainedBy(KindGoroutine, m.Goroutines)
			if len(m.WhenWaitingIn) > 0 {
				waiting, _ := d.explainedBy(KindGoroutine, m.WhenWaitingIn)
				if !slices.ContainsFunc(waiting, func(i int) bool { return !d.folded[i] }) {
					continue
				}
			}
			memory, share = d.explainedByServiceCalls(KindMemory, m.Memory)
		}
		if len(m.Memory) > 0 {
			memory = append(memory, d.explainedBySource(m.Calls)...)
		}
		for _, i := range append(goroutines, memory...) {
			f := &d.findings[i]
			if m.InServiceCode && !d.app.own(frame{f.Function, f.File, f.Line}) {
				continue
			}
			// A finding an earlier entry explains keeps it: the catalogue
			// lists the more specific first (context.WithTimeout's timer
			// is a time.AfterFunc the service never called).
			if d.folded[i] || f.Cause != "" || explainedByKnownBug(*f) {
				continue
			}
			f.Title += " — " + m.Name
			f.Cause = m.ID
			f.Fix = fmt.Sprintf("%s. Why: %s", m.Fix, m.Cause) + whereItWaits(f.Fix)
			if share > 0 && strings.HasPrefix(f.ID, "leak.") && f.ID != "leak.goroutine-growth" {
				f.Evidence["signature_share_of_growth"] = share
			}
		}
	}
	for _, m := range list {
		if len(m.Keeps) > 0 && d.signatureInStacks(m.Keeps) {
			d.keptByCalls(m)
		}
	}
}

// explainedBySource returns the leak findings at a line of the service's
// own code whose source calls one of calls (by the name the source
// writes: context.WithValue, rate.NewLimiter): the statement that makes
// the library's memory makes what the samples caught at the line too (the
// value it hands the library, boxed), however few of the library's own
// allocations they caught. A method (sync.(*Map).Store) is called on a
// receiver the service names: the line calls it when its receiver is
// declared of the method's type in the same file (callsMethod).
func (d *diagnosis) explainedBySource(calls []string) []int {
	var funcs []string
	var methods []method
	for _, c := range calls {
		if m, ok := methodOf(c); ok {
			methods = append(methods, m)
		} else if !strings.ContainsAny(c, "()") {
			funcs = append(funcs, strings.TrimSuffix(path.Base(c), "[...]"))
		}
	}
	var out []int
	for i, f := range d.findings {
		if len(funcs)+len(methods) == 0 || !strings.HasPrefix(f.ID, "leak.") || f.ID == "leak.goroutine-growth" || !d.app.own(frame{f.Function, f.File, f.Line}) {
			continue
		}
		src, ok := d.sourceLine(site{f.Function, f.File, f.Line})
		if !ok {
			continue
		}
		code, _, _ := strings.Cut(src, "//")
		if slices.ContainsFunc(funcs, func(name string) bool { return callsName(code, name) }) ||
			slices.ContainsFunc(methods, func(m method) bool { return d.callsMethod(f.File, code, m) }) {
			out = append(out, i)
		}
	}
	return out
}

// method is a method of a catalogue entry's calls: Store of sync's Map.
type method struct {
	pkg, typ, name string
}

// methodOf splits a call written pkg.(*T).M into its package's name (as
// the source names it: packageName), type and method.
func methodOf(call string) (method, bool) {
	open := strings.Index(call, ".(")
	if open < 0 {
		return method{}, false
	}
	typ, name, ok := strings.Cut(call[open+2:], ").")
	if !ok || name == "" || strings.ContainsAny(name, "().") {
		return method{}, false
	}
	return method{pkg: packageName(call[:open]), typ: strings.TrimPrefix(typ, "*"), name: name}, true
}

// packageName is the name a package of importPath goes by, as Go's
// conventions make it: the last element of the path, without a major
// version element (/v2), a gopkg.in version (.v3), or a go- prefix or
// -go suffix: github.com/patrickmn/go-cache is cache, gopkg.in/yaml.v3
// yaml.
func packageName(importPath string) string {
	base := path.Base(importPath)
	if v := strings.TrimPrefix(base, "v"); v != base && v != "" && strings.Trim(v, "0123456789") == "" {
		base = path.Base(path.Dir(importPath))
	}
	if i := strings.Index(base, ".v"); i > 0 {
		base = base[:i]
	}
	return strings.TrimSuffix(strings.TrimPrefix(base, "go-"), "-go")
}

// callsMethod reports whether code, a line of file, calls m on a receiver
// that file declares of m's type: a variable, field or parameter written
// "recv sync.Map" or "recv *sync.Map", or assigned "recv = &sync.Map{}"
// or "recv := new(sync.Map)". A receiver declared in another file is not
// seen.
func (d *diagnosis) callsMethod(file, code string, m method) bool {
	for _, recv := range receiversOf(code, m.name) {
		if d.declares(file, recv, m) {
			return true
		}
	}
	return false
}

// receiversOf returns the last identifier of each receiver code calls
// name on: seenAt in "seenAt.Store(", cache in "s.cache.Store(".
func receiversOf(code, name string) []string {
	var out []string
	call := "." + name + "("
	for off := 0; ; {
		i := strings.Index(code[off:], call)
		if i < 0 {
			return out
		}
		end := off + i
		off = end + len(call)
		start := end
		for start > 0 && isIdentByte(code[start-1]) {
			start--
		}
		if start < end {
			out = append(out, code[start:end])
		}
	}
}

// maxDeclarationLines bounds the lines of a file read to find where a
// receiver is declared.
const maxDeclarationLines = 20000

// declares reports whether file declares recv of m's type (see
// callsMethod). Its answers are kept: a file is read once per receiver.
func (d *diagnosis) declares(file, recv string, m method) bool {
	key := file + "\x00" + recv + "\x00" + m.pkg + "." + m.typ
	if got, ok := d.declared[key]; ok {
		return got
	}
	typ := `[A-Za-z_][A-Za-z0-9_]*\.` + regexp.QuoteMeta(m.typ) + `\b`
	decl := regexp.MustCompile(`(^|[^A-Za-z0-9_.])` + regexp.QuoteMeta(recv) + `(\s+\*?|\s*:?=\s*(&|new\()?)` + typ)
	found := false
	for n := int64(1); n <= maxDeclarationLines && !found; n++ {
		line, ok := d.in.Source.Line(file, n)
		if !ok {
			break
		}
		code, _, _ := strings.Cut(line, "//")
		found = strings.Contains(code, m.pkg+"."+m.typ) && decl.MatchString(code)
	}
	if d.declared == nil {
		d.declared = map[string]bool{}
	}
	d.declared[key] = found
	return found
}

// callsName reports whether code calls name: name followed by its
// arguments or its type arguments, and not the tail of a longer name.
func callsName(code, name string) bool {
	for off := 0; ; {
		i := strings.Index(code[off:], name)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(name)
		off = end
		if start > 0 && (isIdentByte(code[start-1]) || code[start-1] == '.') {
			continue
		}
		if end < len(code) && (code[end] == '(' || code[end] == '[') {
			return true
		}
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// keptByCalls explains by m the live heap's growth that its samples do
// not place (no site, or a lead site outside the service's code with
// fewer than MinPlacingSamples samples), when the service allocated
// through one of m's Keeps in the window: those calls only add to what
// the library keeps, so the calls the service made while the heap grew
// are growth, however few of their objects the in-use samples caught. A logrus hook is
// sixteen bytes: at 400 a second the hooks grow the heap steadily for
// minutes before a sample of 512 KiB lands on one, while the request
// line each keeps lands in net/http.
func (d *diagnosis) keptByCalls(m Misuse) {
	if d.allocs == nil || d.allocsSinceStart {
		// Counts since the process started do not say the calls go on.
		return
	}
	i := slices.IndexFunc(d.findings, func(f result.Finding) bool {
		switch {
		case f.ID == "leak.live-growth":
			return true
		case f.ID == "leak.inuse-growth" && f.Evidence["site_samples"] < MinPlacingSamples:
			return !d.app.own(frame{f.Function, f.File, f.Line})
		}
		return false
	})
	if i < 0 || d.folded[i] || d.findings[i].Cause != "" || explainedByKnownBug(d.findings[i]) {
		return
	}
	kept := allocatedThrough(d.allocs, m.Keeps)
	if kept <= 0 {
		return
	}
	f := &d.findings[i]
	f.Title = strings.TrimSuffix(f.Title, unplacedTitle) + fmt.Sprintf("; too few samples place it, but the service kept calling %s in the window (≈ %s allocated there), which keeps what it adds — %s",
		functionList(m.Keeps), humanize.Bytes(kept), m.Name)
	f.Cause = m.ID
	f.Fix = fmt.Sprintf("%s. Why: %s", m.Fix, m.Cause)
	f.Evidence["kept_allocated_bytes"] = kept
}

// allocatedThrough returns the bytes an allocation profile counts in
// stacks that hold one of the functions.
func allocatedThrough(p *profile.Profile, functions []string) float64 {
	i := index(p, pprofx.AllocSpace)
	if i < 0 {
		return 0
	}
	var n float64
	for _, s := range p.Sample {
		if s.Value[i] > 0 && slices.ContainsFunc(frames(s), func(f frame) bool { return inSignature(functions, f.function) }) {
			n += float64(s.Value[i])
		}
	}
	return n
}

// explainedByKnownBug says whether a known bug (regressions.yaml) already
// explains a finding: its fix is an upgrade, or a move off a module.
func explainedByKnownBug(f result.Finding) bool {
	return strings.HasPrefix(f.Fix, "upgrade ") || strings.HasPrefix(f.Fix, "move off ")
}

// whereItWaits keeps, from a finding's generic fix, the stack it names
// (where the goroutines wait, or the memory grows), for the misuse's fix
// that replaces it.
func whereItWaits(fix string) string {
	i := strings.LastIndex(fix, "stack is ")
	if i < 0 {
		return ""
	}
	return ". The stack is " + fix[i+len("stack is "):]
}
