package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/perf/benchunit"

	"github.com/heapscope/heapscope/internal/bench"
	"github.com/heapscope/heapscope/internal/gate"
)

// benchJUnit writes the report as JUnit XML, so that CI systems show each
// benchmark as a test case: one test suite per file configuration (named
// after its package), one test case per benchmark, a failure for every
// gate that failed on it, the benchmark skipped when only one side has it,
// and its figures in every unit in system-out.
func benchJUnit(w io.Writer, r *bench.Report) error {
	type suiteAcc struct {
		config []bench.ConfigValue
		names  []string
		out    map[string][]string
		fails  map[string][]bench.Decision
		sides  map[string][2]bool
	}
	var order []string
	suites := map[string]*suiteAcc{}
	for _, t := range r.Tables {
		key := benchConfigKey(t.Config)
		s := suites[key]
		if s == nil {
			s = &suiteAcc{config: t.Config, out: map[string][]string{}, fails: map[string][]bench.Decision{}, sides: map[string][2]bool{}}
			suites[key] = s
			order = append(order, key)
		}
		class := benchunit.ClassOf(t.Unit)
		for _, row := range t.Rows {
			if !slices.Contains(s.names, row.Name) {
				s.names = append(s.names, row.Name)
			}
			sides := s.sides[row.Name]
			sides[0] = sides[0] || row.Old != nil
			sides[1] = sides[1] || row.New != nil
			s.sides[row.Name] = sides
			sc := rowScale(row, class)
			f := func(x *bench.Summary) string {
				if x == nil {
					return "-"
				}
				return summaryText(sc, x)
			}
			line := fmt.Sprintf("%s: %s → %s", t.Unit, f(row.Old), f(row.New))
			if row.Delta != nil {
				line += fmt.Sprintf("  %s (%s)", row.Delta.Text, row.Delta.Stat())
			}
			s.out[row.Name] = append(s.out[row.Name], line)
		}
	}
	for _, d := range r.Decisions {
		s := suites[benchConfigKey(d.Config)]
		line := fmt.Sprintf("gate %s: %s: %s", d.Gate, outcomeLabel(d.Outcome), d.Reason)
		s.out[d.Benchmark] = append(s.out[d.Benchmark], line)
		if d.Outcome == gate.Fail {
			s.fails[d.Benchmark] = append(s.fails[d.Benchmark], d)
		}
	}

	doc := junitSuites{Name: fmt.Sprintf("heapscope bench %s → %s", r.Old, r.New)}
	for _, key := range order {
		s := suites[key]
		js := junitSuite{Name: suiteName(s.config)}
		for _, kv := range s.config {
			js.Properties = append(js.Properties, junitProperty{Name: kv.Key, Value: kv.Value})
		}
		for _, name := range s.names {
			tc := junitCase{Name: name, Classname: js.Name, SystemOut: &junitText{Text: xmlText(strings.Join(s.out[name], "\n"))}}
			switch sides := s.sides[name]; {
			case !sides[1]:
				tc.Skipped = &junitSkipped{Message: "only in " + r.Old}
				js.Skipped++
			case !sides[0]:
				tc.Skipped = &junitSkipped{Message: "only in " + r.New}
				js.Skipped++
			}
			for _, d := range s.fails[name] {
				tc.Failures = append(tc.Failures, junitFailure{Type: "gate", Message: d.Gate + ": " + d.Reason, Text: xmlText(d.Reason)})
			}
			if len(tc.Failures) > 0 {
				js.Failures++
			}
			js.Tests++
			js.Cases = append(js.Cases, tc)
		}
		doc.Tests += js.Tests
		doc.Failures += js.Failures
		doc.Skipped += js.Skipped
		doc.Suites = append(doc.Suites, js)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// xmlText replaces what XML cannot hold in character data (invalid UTF-8,
// control characters) with U+FFFD; encoding/xml escapes attributes itself
// but writes CDATA sections as they are.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == utf8.RuneError, r >= 0xFFFE && r <= 0xFFFF, r >= 0xD800 && r <= 0xDFFF:
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// suiteName is the package of a configuration, or its values joined.
func suiteName(c []bench.ConfigValue) string {
	if pkg := benchConfigValue(c, "pkg"); pkg != "" {
		return pkg
	}
	if len(c) == 0 {
		return "benchmarks"
	}
	parts := make([]string, len(c))
	for i, kv := range c {
		parts[i] = kv.Key + "=" + kv.Value
	}
	return strings.Join(parts, " ")
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string         `xml:"name,attr"`
	Classname string         `xml:"classname,attr"`
	Skipped   *junitSkipped  `xml:"skipped,omitempty"`
	Failures  []junitFailure `xml:"failure"`
	SystemOut *junitText     `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Text    string `xml:",cdata"`
}

// junitText is element content kept as written, new lines included.
type junitText struct {
	Text string `xml:",cdata"`
}
