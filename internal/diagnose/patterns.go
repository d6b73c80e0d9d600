package diagnose

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/pprofx"
)

// A pattern is a known costly way to write Go, recognised from allocation
// stacks, CPU frames or the source line, with its specific fix.
type pattern struct {
	id    string
	what  string // for the title: "a gzip writer created per call"
	fix   string
	match string // how it was recognised, for the title
}

var (
	patCompressor = pattern{id: "pattern.per-call-compressor", what: "a compressor created per call",
		fix: "compressors allocate hundreds of KiB of tables when created: keep them in a sync.Pool and Reset(w) each one onto the new writer (gzip.Writer.Reset, flate.Writer.Reset)"}
	patJSON = pattern{id: "pattern.json-per-call", what: "JSON encoding of a map built per call",
		fix: "encoding a map[string]any allocates the map, every boxed value and the sorted keys, and a new json.Encoder per response adds its own buffer: encode a struct (fields in a fixed order, no boxing) into a buffer from a sync.Pool and write it once, or append the JSON by hand for a fixed shape"}
	patSprintf = pattern{id: "pattern.sprintf-conversion", what: "fmt.Sprintf for a simple conversion",
		fix: "fmt.Sprintf boxes its arguments and parses the format on every call: use strconv (Itoa, FormatInt, Quote) or plain concatenation, or strconv.AppendInt into a reused buffer"}
	patRegexp = pattern{id: "pattern.regexp-per-call", what: "a regexp compiled per call",
		fix: "compile the expression once, in a package-level var (regexp.MustCompile at init) or a sync.OnceValue, and reuse it: a *regexp.Regexp is safe for concurrent use"}
	patConversion = pattern{id: "pattern.string-bytes-conversion", what: "a string↔[]byte conversion on a hot path",
		fix: "each conversion copies: keep the data in one form end to end (take []byte or string throughout), use the []byte-taking APIs (w.Write, bytes.* instead of strings.*), append the string into a reused buffer (append(buf[:0], s...)), or let the compiler elide the copy by converting only in a map index or comparison"}
	patAppend = pattern{id: "pattern.append-growth", what: "append growing a slice without capacity",
		fix: "each time append runs out of capacity it allocates a larger array and copies (runtime.growslice): preallocate with make([]T, 0, n) when the size is known or bounded, or reuse the slice (s = s[:0]) across calls"}
	patLarge = pattern{id: "pattern.large-pointer-alloc", what: "a large allocation of pointer-holding memory",
		fix: "objects over 32 KiB get spans of their own, and those holding pointers are zeroed in full and scanned by the GC: reuse them (a pool, or one buffer kept for the service's life), make channels' buffers small, or hold values instead of pointers"}
)

// patternHit accumulates what one pattern costs at one site.
type patternHit struct {
	p              pattern
	at             site
	bytes, objects float64
	cpuSeconds     float64
	samples        float64 // estimated, see rawSamples
	how            string
	objectSize     float64
}

// patterns is check 4.
func (d *diagnosis) patterns() {
	hits := map[string]*patternHit{}
	hit := func(p pattern, at site, how string) *patternHit {
		key := p.id + "\x00" + at.where()
		h := hits[key]
		if h == nil {
			h = &patternHit{p: p, at: at, how: how}
			hits[key] = h
		}
		return h
	}
	jsonSeen := false
	if p := d.allocs; p != nil {
		bi, oi := index(p, pprofx.AllocSpace), index(p, pprofx.AllocObjects)
		for _, s := range p.Sample {
			fs := frames(s)
			if len(fs) == 0 || fromProfiler(fs) {
				continue
			}
			b, o := float64(s.Value[bi]), float64(s.Value[oi])
			count := func(h *patternHit) {
				h.bytes += b
				h.objects += o
				h.samples += rawSamples(s.Value[oi], s.Value[bi], p.Period)
			}
			if at, ok := d.callerOutside(fs, isCompressorCtor, "compress/"); ok {
				count(hit(patCompressor, at, "a compressor constructor in the allocation stack"))
			}
			if at, ok := d.jsonCaller(fs); ok {
				jsonSeen = true
				count(hit(patJSON, at, "encoding/json map encoding in the allocation stack"))
			}
			if at, ok := d.callerOutside(fs, func(fn string) bool { return fn == "fmt.Sprintf" }, "fmt."); ok {
				if src, ok := d.sourceLine(at); ok && simpleSprintfRE.MatchString(src) {
					count(hit(patSprintf, at, "fmt.Sprintf with a lone verb: "+strings.TrimSpace(src)))
				}
			}
			if at, ok := d.callerOutside(fs, isRegexpCompile, "regexp"); ok && !strings.Contains(at.function, ".init") {
				count(hit(patRegexp, at, "regexp compilation in the allocation stack of "+humanize.ShortFunction(at.function)))
			}
			leaf := fs[0]
			if !d.app.is(leaf.function) {
				continue
			}
			src, haveSrc := d.sourceLine(leaf.site())
			if size := objectSize(s.NumLabel["bytes"]); size >= d.th.Patterns.LargeAllocBytes && haveSrc && pointerAllocRE.MatchString(src) {
				h := hit(patLarge, leaf.site(), fmt.Sprintf("%s objects allocated by `%s`", humanize.Bytes(size), strings.TrimSpace(src)))
				count(h)
				h.objectSize = max(h.objectSize, size)
			}
			if !haveSrc {
				continue
			}
			if conversionRE.MatchString(src) {
				count(hit(patConversion, leaf.site(), "the line converts: "+strings.TrimSpace(src)))
			}
			if strings.Contains(src, "append(") && !mapInsertRE.MatchString(src) {
				count(hit(patAppend, leaf.site(), "the line appends: "+strings.TrimSpace(src)))
			}
			if mapLiteralRE.MatchString(src) {
				count(hit(patJSON, leaf.site(), "the line builds a map per call: "+strings.TrimSpace(src)))
			}
		}
	}
	// CPU frames that heap profiles hide: the runtime's growslice and
	// conversions appear under their calling line.
	var cpuTotal float64
	if p := d.in.CPU; p != nil {
		if vi := index(p, "cpu"); vi >= 0 {
			for _, s := range p.Sample {
				cpuTotal += float64(s.Value[vi]) / 1e9
				fs := frames(s)
				if fromProfiler(fs) {
					continue
				}
				for _, c := range []struct {
					fn string
					p  pattern
				}{
					{"runtime.growslice", patAppend},
					{"runtime.stringtoslicebyte", patConversion},
					{"runtime.slicebytetostring", patConversion},
				} {
					// Only a line of the service's own code: a conversion
					// inside net/textproto is nothing its user can change.
					if at := callerOf(fs, c.fn); at.function != "" && d.app.is(at.function) {
						h := hit(c.p, at, c.fn+" under the line in the CPU profile")
						h.cpuSeconds += float64(s.Value[vi]) / 1e9
					}
				}
			}
		}
	}
	list := slices.SortedFunc(maps.Values(hits), func(a, b *patternHit) int {
		if c := cmp.Compare(b.bytes, a.bytes); c != 0 {
			return c
		}
		if c := cmp.Compare(b.cpuSeconds, a.cpuSeconds); c != 0 {
			return c
		}
		return cmp.Compare(a.p.id+a.at.where(), b.p.id+b.at.where())
	})
	th := d.th.Patterns
	for _, h := range list {
		if h.p.id == patJSON.id && !jsonSeen {
			continue // a map literal alone is not the JSON pattern
		}
		c := d.costOf(h.bytes, h.objects)
		cpuShare := 0.0
		if cpuTotal > 0 {
			cpuShare = h.cpuSeconds / cpuTotal
		}
		if c.byteShare < th.MinShare && c.objectShare < th.MinShare && cpuShare < th.MinShare {
			continue
		}
		sev := Info
		if h.bytes > 0 || h.objects > 0 {
			sev = d.severity(c)
		}
		if cpuShare >= th.MinShare {
			sev = max(sev, Low)
		}
		ev := c.evidence(map[string]float64{"samples": math.Round(h.samples*10) / 10})
		if h.cpuSeconds > 0 {
			ev["cpu_seconds"] = h.cpuSeconds
			ev["cpu_share"] = cpuShare
		}
		if h.objectSize > 0 {
			ev["object_bytes"] = h.objectSize
		}
		title := fmt.Sprintf("%s at %s", h.p.what, h.at.where())
		if h.bytes > 0 || h.objects > 0 {
			title += ": " + c.describe()
		} else {
			title += fmt.Sprintf(": %s of CPU", humanize.Percent(cpuShare))
		}
		title += "; " + h.how
		conf := 0.7
		if strings.HasPrefix(h.how, "the line") {
			conf = 0.8
		}
		d.add(newFinding(h.p.id, sev, h.at, title, ev, h.p.fix, conf))
	}
}

func isCompressorCtor(fn string) bool {
	for _, c := range []string{"compress/flate.NewWriter", "compress/gzip.NewWriter", "compress/zlib.NewWriter", "compress/lzw.NewWriter"} {
		if strings.HasPrefix(fn, c) {
			return true
		}
	}
	return false
}

func isRegexpCompile(fn string) bool {
	switch fn {
	case "regexp.Compile", "regexp.MustCompile", "regexp.CompilePOSIX", "regexp.MustCompilePOSIX", "regexp.MatchString", "regexp.Match":
		return true
	}
	return false
}

// callerOutside finds a frame matching ctor and returns the innermost
// frame of the service's code above it, else the first frame above it
// whose function does not start with pkgPrefix.
func (d *diagnosis) callerOutside(fs []frame, ctor func(string) bool, pkgPrefix string) (site, bool) {
	for i, f := range fs {
		if !ctor(f.function) {
			continue
		}
		// The service's own line leads: a compressor a gzip.Writer makes
		// on its first Write is created under io.WriteString, and what
		// the user can change is the line that made the gzip.Writer.
		if app, ok := d.app.firstApp(fs[i+1:]); ok {
			return app.site(), true
		}
		for _, g := range fs[i+1:] {
			if !strings.HasPrefix(g.function, pkgPrefix) && !isRuntime(g.function) {
				return g.site(), true
			}
		}
		return site{}, false
	}
	return site{}, false
}

// jsonCaller returns the service's frame that encodes a map with
// encoding/json (or creates an encoder) in this allocation stack.
func (d *diagnosis) jsonCaller(fs []frame) (site, bool) {
	isMap, entry := false, false
	for _, f := range fs {
		switch {
		case strings.HasPrefix(f.function, "encoding/json.mapEncoder"):
			isMap = true
		case f.function == "encoding/json.NewEncoder":
			isMap, entry = true, true
		case f.function == "encoding/json.(*Encoder).Encode" || f.function == "encoding/json.Marshal" || f.function == "encoding/json.MarshalIndent":
			entry = true
		}
	}
	if !isMap || !entry {
		return site{}, false
	}
	if f, ok := d.app.firstApp(fs); ok {
		return f.site(), true
	}
	return site{}, false
}

func objectSize(v []int64) float64 {
	if len(v) == 0 {
		return 0
	}
	return float64(v[0])
}

var (
	// simpleSprintfRE: fmt.Sprintf with a format that is one verb, with
	// or without a constant prefix or suffix.
	simpleSprintfRE = regexp.MustCompile(`fmt\.Sprintf\("[^"%]*%[dsvxqt][^"%]*",\s*[^,()]+\)`)
	// conversionRE: []byte(x) or string(x) of a variable or field.
	conversionRE = regexp.MustCompile(`(\[\]byte|\bstring)\(\s*[A-Za-z_][\w\.]*(\[[^\]]*\])?\s*\)`)
	// mapLiteralRE: a map literal of interface values, the shape built to
	// be encoded.
	mapLiteralRE = regexp.MustCompile(`map\[string\](any|interface\{\})\{`)
	// pointerAllocRE: a make of a channel, a slice of pointers, strings,
	// interfaces, slices or maps: element types that hold pointers.
	pointerAllocRE = regexp.MustCompile(`make\(\s*(chan\s|\[\]\s*(\*|string|any|interface|\[\]|map\[))`)
)
