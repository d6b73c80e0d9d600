package view

import (
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/driver"
	"github.com/google/pprof/profile"
)

// driverMu serialises calls to driver.PProf: the driver keeps its
// configuration and state in package variables.
var driverMu sync.Mutex

// pprofUI returns pprof's own web UI for p (flame graph, top, graph,
// source, peek, disassembly, download), its handlers mounted under prefix
// (such as /pprof/heap-000). pprof receives the profile through a Fetcher
// that names no source, so it saves no copy under ~/pprof, and it opens no
// browser and listens on nothing: heapscope's server serves the handlers.
//
// With noFiles, pprof's source and disassembly views are left out: they
// open whatever files the profile names, which a server showing other
// machines' profiles must not let a profile choose.
//
// The UI writes nothing: pprof's saveconfig and deleteconfig, which edit
// a settings file in the user's config directory
// ($XDG_CONFIG_HOME/pprof/settings.json or ~/.config/pprof/settings.json),
// are refused, and they are its only routes that write. pprof still reads
// that file to list saved configurations in its menu.
func pprofUI(prefix, name string, p *profile.Profile, log io.Writer, noFiles bool) (http.Handler, error) {
	driverMu.Lock()
	defer driverMu.Unlock()
	var handlers map[string]http.Handler
	ui := &quietUI{log: log}
	err := driver.PProf(&driver.Options{
		// -http makes the driver build its web UI and hand it to
		// HTTPServer; the address is not listened on.
		Flagset: newFlagset([]string{"-http=127.0.0.1:0", "-no_browser", "-symbolize=none", name}),
		Fetch:   fetcher{p},
		UI:      ui,
		HTTPServer: func(args *driver.HTTPServerArgs) error {
			handlers = args.Handlers
			return nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("start pprof's web UI for %s: %w", name, err)
	}
	if len(handlers) == 0 {
		return nil, fmt.Errorf("start pprof's web UI for %s: no handlers (%s)", name, strings.TrimSpace(ui.errors.String()))
	}
	_, noDot := exec.LookPath("dot")
	mux := http.NewServeMux()
	for path, h := range handlers {
		switch {
		case writingRoutes[path]:
			h = refuseWrite
		case noFiles && (path == "/source" || path == "/disasm"):
			continue
		case path == "/graph" && noDot != nil:
			h = noGraph
		case path == "/disasm":
			h = needsFunction(h)
		}
		mux.Handle(path, h)
	}
	return http.StripPrefix(prefix, mux), nil
}

// noGraph answers pprof's graph view where Graphviz, which draws it, is
// not installed: what the other views of the same profile show, a link
// away, instead of pprof's error.
var noGraph = explain("No graph view",
	"pprof draws its graph view with Graphviz's <code>dot</code>, which is not installed where this server runs.")

// needsFunction answers pprof's disassembly without a function chosen,
// which pprof refuses, with how to choose one; h answers the rest.
func needsFunction(h http.Handler) http.Handler {
	none := explain("Choose a function",
		"pprof's disassembly shows the functions a regular expression matches: select one in a view below, then View → Disassembly.")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("f") == "" {
			none.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// explain answers with a page of pprof's UI that says why a view is not
// shown (text is HTML), and links to the same profile's other views with
// the same options.
func explain(title, text string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := template.HTMLEscapeString(r.URL.RawQuery)
		if q != "" {
			q = "?" + q
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%[1]s</title></head>
<body><h1>%[1]s</h1>
<p>%[2]s</p>
<p>The same profile, with the same options: <a href="flamegraph%[3]s">flame graph</a> · <a href="top%[3]s">top</a> · <a href="peek%[3]s">peek</a>.</p>
</body></html>
`, template.HTMLEscapeString(title), text, q)
	})
}

// writingRoutes are the routes of pprof's UI that write files: its saved
// configurations.
var writingRoutes = map[string]bool{"/saveconfig": true, "/deleteconfig": true}

// refuseWrite answers the routes of writingRoutes.
var refuseWrite = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "saved configurations are off: heapscope's pprof UI writes no files; bookmark the page's URL instead", http.StatusForbidden)
})

// fetcher hands pprof a profile already in memory.
type fetcher struct{ p *profile.Profile }

// Fetch returns a copy of the profile (pprof may change what it gets)
// and no source, so that pprof does not save a copy of it.
func (f fetcher) Fetch(src string, duration, timeout time.Duration) (*profile.Profile, string, error) {
	return f.p.Copy(), "", nil
}

// flagset gives the driver a fixed command line, parsed by a FlagSet of
// its own rather than the process's flag.CommandLine.
type flagset struct {
	fs    *flag.FlagSet
	args  []string
	extra []string
}

var _ driver.FlagSet = (*flagset)(nil)

func newFlagset(args []string) *flagset {
	fs := flag.NewFlagSet("pprof", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &flagset{fs: fs, args: args}
}

// Bool defines a boolean flag.
func (f *flagset) Bool(name string, def bool, usage string) *bool { return f.fs.Bool(name, def, usage) }

// Int defines an integer flag.
func (f *flagset) Int(name string, def int, usage string) *int { return f.fs.Int(name, def, usage) }

// Float64 defines a floating-point flag.
func (f *flagset) Float64(name string, def float64, usage string) *float64 {
	return f.fs.Float64(name, def, usage)
}

// String defines a string flag.
func (f *flagset) String(name, def, usage string) *string { return f.fs.String(name, def, usage) }

// StringList defines a string flag given once at most.
func (f *flagset) StringList(name, def, usage string) *[]*string {
	return &[]*string{f.fs.String(name, def, usage)}
}

// ExtraUsage returns the usage text added with AddExtraUsage.
func (f *flagset) ExtraUsage() string { return strings.Join(f.extra, "\n") }

// AddExtraUsage adds to the usage text.
func (f *flagset) AddExtraUsage(eu string) { f.extra = append(f.extra, eu) }

// Parse parses the fixed command line and returns its arguments; on an
// error it calls usage and returns none.
func (f *flagset) Parse(usage func()) []string {
	if err := f.fs.Parse(f.args); err != nil || f.fs.NArg() == 0 {
		usage()
		return nil
	}
	return f.fs.Args()
}

// quietUI keeps pprof's messages off the terminal: errors go to log, and
// are kept to explain a failure.
type quietUI struct {
	mu     sync.Mutex
	log    io.Writer
	errors strings.Builder
}

var _ driver.UI = (*quietUI)(nil)

// ReadLine ends pprof's interactive shell at once.
func (u *quietUI) ReadLine(string) (string, error) { return "", io.EOF }

// Print drops a message: they tell where pprof would serve, which is not
// where heapscope serves.
func (u *quietUI) Print(args ...any) {}

// PrintErr logs an error message and keeps it.
func (u *quietUI) PrintErr(args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	msg := fmt.Sprint(args...)
	u.errors.WriteString(msg + "\n")
	if u.log != nil {
		fmt.Fprintln(u.log, "pprof: "+strings.TrimSpace(msg))
	}
}

// IsTerminal reports false: there is no terminal behind this UI.
func (u *quietUI) IsTerminal() bool { return false }

// WantBrowser reports false: heapscope opens the browser itself.
func (u *quietUI) WantBrowser() bool { return false }

// SetAutoComplete does nothing: there is no shell.
func (u *quietUI) SetAutoComplete(func(string) string) {}

// errNoProfile is the error of a request for a profile the server does
// not hold.
var errNoProfile = errors.New("no such profile")
