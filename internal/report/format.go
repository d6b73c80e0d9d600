// Package report renders for people everything heapscope shows: runs
// (the terminal summary, report.md, report.html), findings, comparisons,
// top tables, load results, gctrace summaries and plots, execution-trace
// GC timelines, benchmark comparisons, the allocator lab's report and
// heapscope's own version.
// Each is a Document, and Write writes a Document in one of its formats
// (text, Markdown, HTML, SVG, JSON, JUnit XML) to an io.Writer, so the
// command line and an HTTP handler render alike. Charts are drawn by
// report/chart; figures are worded by internal/humanize.
//
// It is pure: values in, bytes out to an io.Writer; no file, no flag, no
// clock.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/heapscope/heapscope/internal/atomicfile"
)

// Format is an output format of the renderers.
type Format string

// The formats. Every Document has JSON; which others it has, its
// Formats method says.
const (
	FormatText     Format = "text"
	FormatJSON     Format = "json"
	FormatMarkdown Format = "markdown"
	FormatHTML     Format = "html"
	FormatSVG      Format = "svg"
	FormatJUnit    Format = "junit"
)

// ext is the file extension of a format.
func (f Format) ext() string {
	switch f {
	case FormatText:
		return ".txt"
	case FormatMarkdown:
		return ".md"
	case FormatJUnit:
		return ".xml"
	}
	return "." + string(f)
}

// Document is something report renders: Run, Findings, Comparison, Top,
// Load, GCTrace, Trace, Bench, Allocbench or Version, each a small struct
// around the values it shows. Only this package implements it.
type Document interface {
	// Formats lists the formats the document renders in.
	Formats() []Format
	// data is the value its JSON encodes.
	data() any
	// render writes it in f, one of its formats other than JSON.
	render(w io.Writer, f Format) error
}

// Write writes d to w in the format f: JSON through one encoder (indented
// by two spaces, the keys the values' tags say), every other format by
// d's renderer. A format d does not render in is an error that names
// those it does.
func Write(w io.Writer, f Format, d Document) error {
	if !slices.Contains(d.Formats(), f) {
		return fmt.Errorf("render %s: format %q is not one of %s", documentName(d), f, formatList(d.Formats(), false))
	}
	if f == FormatJSON {
		return writeJSON(w, d.data())
	}
	return d.render(w, f)
}

// documentName names a document's type in an error: "report.Load".
func documentName(d Document) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", d), "*")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// textFormats are the formats of --format when a command names none.
var textFormats = []Format{FormatText, FormatJSON, FormatMarkdown}

// ParseFormat reads a --format value, one of the formats a command prints
// on stdout (text, json and markdown when it names none); "md" is
// markdown. Its error names the formats the command takes.
func ParseFormat(s string, formats ...Format) (Format, error) {
	if len(formats) == 0 {
		formats = textFormats
	}
	f := Format(s)
	if f == "md" {
		f = FormatMarkdown
	}
	if slices.Contains(formats, f) {
		return f, nil
	}
	return "", fmt.Errorf("--format %q: give %s", s, formatList(formats, false))
}

// FormatOf returns the format that the extension of a file's name picks,
// one of formats: .txt text, .md markdown, .json, .html, .svg, .xml JUnit.
// Its error names the extensions taken.
func FormatOf(name string, formats ...Format) (Format, error) {
	ext := strings.ToLower(filepath.Ext(name))
	for _, f := range formats {
		if f.ext() == ext {
			return f, nil
		}
	}
	return "", fmt.Errorf("the extension picks the format: use %s", formatList(formats, true))
}

// OutputFormat returns the format the extension of an output file picks
// among formats, "" when no file is given; flag names the option that
// gave it in the error.
func OutputFormat(flag, path string, formats ...Format) (Format, error) {
	if path == "" {
		return "", nil
	}
	f, err := FormatOf(path, formats...)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return f, nil
}

// WriteFile writes doc in format to the file at path, whole or not at
// all (atomicfile).
func WriteFile(path string, format Format, doc Document) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Write(w, format, doc) })
}

// formatList says "text, json or markdown", or with ext the extensions
// ".svg or .html".
func formatList(formats []Format, ext bool) string {
	words := make([]string, len(formats))
	for i, f := range formats {
		words[i] = string(f)
		if ext {
			words[i] = f.ext()
		}
	}
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
