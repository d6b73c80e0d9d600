// Package view is heapscope's local web UI: it serves a run directory (its
// report.html, flame graphs and raw files) or a single profile, and
// pprof's own web UI for each profile, mounted in the same server through
// github.com/google/pprof/driver.
//
// The routes of a Server:
//
//	/                        index, the answer first: the run's status (what
//	                         a partial run or a bundle lacks), its verdict
//	                         (findings, most severe first), a bundle's
//	                         comparison (compare.md); then the report, the
//	                         flame graphs, every profile with links to the
//	                         views below, and every file
//	/run/…                   the run directory's files (report.html links
//	                         to its flame graphs and profiles relatively)
//	/pprof/NAME/…            pprof's web UI for profile NAME: flamegraph,
//	                         top, graph (needs Graphviz), source, peek,
//	                         disasm, download
//	/flamegraph/NAME         heapscope's interactive flame graph of NAME,
//	                         every sample type
//
// pprof's UI for a profile is built on its first request and kept. The
// Server only reads files, and only regular files inside the run
// directory (a symlink out of it is refused); the command decides where it
// listens (127.0.0.1 only). Every route sits behind webguard.Handler: a
// request must name the address the server listens on, cross-origin
// requests that change state or embed its pages are refused, and every
// response forbids framing and outside scripts.
package view

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/flame"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/webguard"
)

// Options tune a Server.
type Options struct {
	// Log receives pprof's own messages; nil discards them.
	Log io.Writer
	// MaxDecompressed caps a profile's decompressed size; 0 means
	// pprofx.DefaultMaxDecompressed.
	MaxDecompressed int64
	// Embedded says the Server is mounted, its path prefix stripped, in
	// another that puts webguard's checks in front of it and sets the
	// Content-Security-Policy its pages need (their scripts are inline,
	// pprof's among them). Its links are relative.
	Embedded bool
	// Capture, when set, is what a store's index says of the run: the
	// history server's, whose pages name the target and the trigger.
	Capture *Capture
}

// Capture is what a store knows of a stored run beside its directory.
type Capture struct {
	// Bundle says the run is a trigger's bundle, not a scheduled run.
	Bundle bool
	// Target is the target's key.
	Target string
	// Trigger is a bundle's trigger and the value that crossed it, for
	// people: "memory>=80% fired at 83.5%".
	Trigger string
	// BeforeOOM marks the last capture before an OOM kill.
	BeforeOOM bool
}

// Profile is one profile a Server offers.
type Profile struct {
	// Name identifies the profile in URLs: its file name without
	// extensions, such as heap-000 or allocs-delta.
	Name string
	// Path is the file, relative to the run directory (or as given, for a
	// single profile).
	Path      string
	Kind      string
	Semantics string
}

// Server serves a run directory or a profile. It is an http.Handler.
type Server struct {
	opts Options
	// dir is the run directory; empty when serving one profile.
	dir      string
	run      *result.Run
	title    string
	profiles []Profile
	windows  []window
	handler  http.Handler

	mu   sync.Mutex
	uis  map[string]http.Handler
	errs map[string]error
	// sampled keeps whether each profile read has samples.
	sampled map[string]bool
	// single holds the profile given alone, read when opened.
	single *profile.Profile
}

// Open prepares a Server for path: a run directory (with its result.json)
// or a profile file.
func Open(path string, opts Options) (*Server, error) {
	if opts.MaxDecompressed <= 0 {
		opts.MaxDecompressed = pprofx.DefaultMaxDecompressed
	}
	s := &Server{opts: opts, uis: map[string]http.Handler{}, errs: map[string]error{}}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if st.IsDir() {
		if err := s.openRun(path); err != nil {
			return nil, err
		}
		s.routes()
		return s, nil
	}
	p, err := readProfile(path, opts.MaxDecompressed)
	if err != nil {
		return nil, err
	}
	return OpenProfile(path, p, opts)
}

// OpenProfile makes a Server of one profile already in memory, such as a
// merge: path names it (its base, less extensions, is its name in URLs).
func OpenProfile(path string, p *profile.Profile, opts Options) (*Server, error) {
	if len(p.Sample) == 0 {
		return nil, fmt.Errorf("profile %s is empty: it has no samples", path)
	}
	s := &Server{opts: opts, uis: map[string]http.Handler{}, errs: map[string]error{}}
	s.single = p
	s.title = "Profile " + filepath.Base(path)
	s.profiles = []Profile{{Name: profileName(path, nil), Path: path, Kind: kindOf(p)}}
	s.routes()
	return s, nil
}

func (s *Server) openRun(dir string) error {
	r, err := rundir.Read(dir)
	if err != nil {
		return fmt.Errorf("%w; give a run directory or a profile file", err)
	}
	s.dir, s.run = dir, r
	s.title = "heapscope run: " + r.Target.URL
	if c := s.opts.Capture; c != nil {
		kind := "Run"
		if c.Bundle {
			kind = "Bundle"
		}
		s.title = kind + " of " + c.Target
		if c.Trigger != "" {
			s.title += ": " + c.Trigger
		}
	} else if isBundle(dir) {
		s.title = "Bundle of " + r.Target.URL
	}
	taken := map[string]bool{}
	if err := s.addProfiles(r, "", taken); err != nil {
		return fmt.Errorf("open run %s: %w", dir, err)
	}
	// A repeated run keeps its profiles in its windows, each a run of its
	// own: their profiles are named after the window (001-heap-000).
	if r.Repeat != nil {
		for _, w := range r.Repeat.Windows {
			if w.Status == result.StatusFailed {
				continue
			}
			if !localPath(w.Path) || !insideDir(dir, w.Path) {
				return fmt.Errorf("open run %s: window path %q leaves the run directory", dir, w.Path)
			}
			wr, err := rundir.Read(filepath.Join(dir, filepath.FromSlash(w.Path)))
			if err != nil {
				return fmt.Errorf("open run %s: %w", dir, err)
			}
			s.windows = append(s.windows, window{Path: w.Path, Run: wr})
			if err := s.addProfiles(wr, w.Path, taken); err != nil {
				return fmt.Errorf("open run %s: window %s: %w", dir, w.Path, err)
			}
		}
	}
	return nil
}

// addProfiles adds the profiles of r, a run or a window of one under
// dir (relative to the run directory).
func (s *Server) addProfiles(r *result.Run, dir string, taken map[string]bool) error {
	prefix := ""
	if dir != "" {
		prefix = filepath.Base(dir) + "-"
	}
	for _, p := range r.Profiles {
		if !localPath(p.Path) {
			return fmt.Errorf("profile path %q leaves the run directory", p.Path)
		}
		rel := p.Path
		if dir != "" {
			rel = dir + "/" + p.Path
		}
		s.profiles = append(s.profiles, Profile{Name: profileName(prefix+filepath.Base(p.Path), taken), Path: rel, Kind: p.Kind, Semantics: p.Semantics})
	}
	return nil
}

// window is a window of a repeated run.
type window struct {
	// Path is the window's directory, relative to the run's.
	Path string
	Run  *result.Run
}

// Title says what the server shows.
func (s *Server) Title() string { return s.title }

// Profiles lists the profiles the server offers, in the run's order.
func (s *Server) Profiles() []Profile { return s.profiles }

// ServeHTTP serves the routes of the package doc.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) routes() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	if s.dir != "" {
		mux.Handle("GET /run/", http.StripPrefix("/run", webguard.Files(s.dir)))
		mux.HandleFunc("GET /report", s.report)
	}
	mux.HandleFunc("/pprof/{name}/", s.pprof)
	mux.HandleFunc("GET /pprof/{name}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("GET /flamegraph/{name}", s.flamegraph)
	// No icon, and no 404 in the browser's console for the one browsers
	// ask for.
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	if s.opts.Embedded {
		s.handler = mux
		return
	}
	s.handler = webguard.Handler(mux, webguard.Options{})
}

func (s *Server) find(name string) (Profile, bool) {
	for _, p := range s.profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// load reads a profile the server offers.
func (s *Server) load(p Profile) (*profile.Profile, error) {
	if s.single != nil {
		return s.single, nil
	}
	data, err := webguard.ReadFile(s.dir, p.Path)
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", p.Path, err)
	}
	return parseProfile(p.Path, data, s.opts.MaxDecompressed)
}

func (s *Server) pprof(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	p, ok := s.find(name)
	if !ok {
		http.Error(w, fmt.Sprintf("%v: %s", errNoProfile, name), http.StatusNotFound)
		return
	}
	h, err := s.pprofHandler(p)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h.ServeHTTP(w, r)
}

// pprofHandler returns pprof's UI for p, building it on first use. A
// failure is kept too: the file will not change while the server runs.
func (s *Server) pprofHandler(p Profile) (http.Handler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.uis[p.Name]; ok {
		return h, nil
	}
	if err, ok := s.errs[p.Name]; ok {
		return nil, err
	}
	prof, err := s.load(p)
	if err == nil {
		var h http.Handler
		h, err = pprofUI("/pprof/"+p.Name, p.Name, prof, s.opts.Log, s.opts.Embedded)
		if err == nil {
			s.uis[p.Name] = h
			return h, nil
		}
	}
	s.errs[p.Name] = err
	return nil, err
}

func (s *Server) flamegraph(w http.ResponseWriter, r *http.Request) {
	p, ok := s.find(r.PathValue("name"))
	if !ok {
		http.Error(w, fmt.Sprintf("%v: %s", errNoProfile, r.PathValue("name")), http.StatusNotFound)
		return
	}
	prof, err := s.load(p)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	page, err := FlamePage("Flame graph of "+filepath.Base(p.Path), FlameNote{}, p.Name, prof)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page)
}

// FlameNote is a line under a flame page's title: a sentence, then a
// link when Href is set.
type FlameNote struct {
	Text, LinkText, Href string
}

// FlamePage draws heapscope's interactive flame graph of a profile as a
// page of its own, every sample type, pruned as heapscope flame prunes
// HTML: what view serves at /flamegraph/NAME, and the history server for
// a merged range. name labels the view in the page; note, when it has
// text, is shown under the title.
func FlamePage(title string, note FlameNote, name string, prof *profile.Profile) ([]byte, error) {
	st, err := pprofx.StacksOf(prof)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", title, err)
	}
	if st.Len() == 0 {
		return nil, fmt.Errorf("%s: the profile has no samples", title)
	}
	t, err := flame.Build(st, flame.Options{AllTypes: true, MinShare: 0.00001})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", title, err)
	}
	var buf bytes.Buffer
	if err := flame.WriteHTMLHead(&buf, title, flamePageStyle, true); err != nil {
		return nil, err
	}
	fmt.Fprintf(&buf, "<h1>%s</h1>\n", template.HTMLEscapeString(title))
	if note.Text != "" {
		fmt.Fprintf(&buf, "<p class=\"note\">%s", template.HTMLEscapeString(note.Text))
		if note.Href != "" {
			fmt.Fprintf(&buf, " <a href=\"%s\">%s</a>", template.HTMLEscapeString(note.Href), template.HTMLEscapeString(note.LinkText))
		}
		buf.WriteString("</p>\n")
	}
	if err := flame.WriteHTMLWidget(&buf, flame.HTMLWidget{ID: "flame", Views: []flame.HTMLView{{Name: name, Tree: t}}}); err != nil {
		return nil, err
	}
	buf.WriteString("</body>\n</html>\n")
	return buf.Bytes(), nil
}

// flamePageStyle is the style of FlamePage's page.
const flamePageStyle = `body { margin: 16px 20px; font: 14px system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 8px; }
p.note { margin: 0 0 12px; color: #555; }
`

// indexData is what the index template shows.
type indexData struct {
	Title string
	Run   *result.Run
	// Capture is Options.Capture.
	Capture *Capture
	// Missing are the lines of a bundle's missing.txt: its files that
	// could not be had.
	Missing []string
	// Findings are the run's, the most severe first.
	Findings []finding
	// Comparison is a bundle's compare.md: the bundle against the
	// target's last healthy run.
	Comparison string
	// ComparisonJSON says the bundle has compare.json too: a comparison
	// that could not be made (no baseline) has compare.md alone.
	ComparisonJSON bool
	// Files are every file of the run directory.
	Files []file
	// Summary is the run's result.json, or result.json.gz in a store.
	Summary  string
	Windows  []window
	Profiles []indexProfile
	// Embedded leaves out the links to pprof's source view.
	Embedded bool
}

var indexTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { margin: 16px 20px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 22px; }
table { border-collapse: collapse; } th, td { text-align: left; padding: 3px 12px 3px 0; border-bottom: 1px solid #eee; vertical-align: top; }
td.links a { margin-right: 10px; }
tr.severity-high td:first-child { color: #c62828; font-weight: 600; }
tr.severity-medium td:first-child { color: #ef6c00; font-weight: 600; }
ul.symptoms { margin: 4px 0; padding-left: 18px; color: #444; }
pre#comparison { background: #f7f7f7; padding: 8px; overflow-x: auto; font-size: 12px; }
#partial { border-left: 4px solid #ef6c00; padding-left: 10px; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{with .Run}}<p id="status" class="status-{{.Status}}">{{.Status}} · window {{.Window.Start.Format "2006-01-02 15:04:05Z"}}, {{printf "%.1f" .Window.DurationSeconds}}s{{with $.Capture}}{{if .BeforeOOM}} · the last capture before an OOM kill{{end}}{{end}}</p>
{{if or .Failures $.Missing}}<div id="partial"><p>{{if .Failures}}Partial: not collected:{{else}}Complete, but without:{{end}}</p><ul>
{{range .Failures}}<li><b>{{.Step}}</b>: {{.Error}}</li>
{{end}}{{range $.Missing}}<li>{{.}}</li>
{{end}}</ul>{{if .Unmeasured}}<p>Not measured, so not shown:</p><ul>
{{range .Unmeasured}}<li><b>{{.Figure}}</b>: {{.Reason}}</li>
{{end}}</ul>{{end}}</div>{{end}}
<h2>Verdict</h2>
{{if $.Findings}}<table id="verdict">
<tr><th>severity</th><th>finding</th><th>where</th><th>fix</th></tr>
{{range $.Findings}}<tr class="severity-{{.Severity}}"><td>{{.Severity}}</td><td>{{.Title}}{{if .Symptoms}}<ul class="symptoms">{{range .Symptoms}}<li>{{.Severity}}: {{.Title}}{{with .Where}} ({{.}}){{end}}</li>{{end}}</ul>{{end}}</td><td><code>{{.Where}}</code></td><td>{{.Fix}}</td></tr>
{{end}}</table>{{else}}<p id="verdict">No finding: nothing in this run calls for a fix.</p>{{end}}
{{if $.Comparison}}<h2>Against the last healthy run</h2>
<p><a href="run/compare.md">compare.md</a>{{if $.ComparisonJSON}} · <a href="run/compare.json">compare.json</a>{{end}}</p>
<pre id="comparison">{{$.Comparison}}</pre>{{end}}
<h2>Reports</h2>
<ul id="reports">
{{with .Files.HTMLReport}}<li><a href="run/{{.}}">{{.}}</a>: tables, charts and flame graphs</li>{{else}}<li><a href="report">report</a>: tables and charts, drawn from the result</li>{{end}}
{{with .Files.Report}}<li><a href="run/{{.}}">{{.}}</a></li>{{end}}
<li><a href="run/{{$.Summary}}">{{$.Summary}}</a></li>
</ul>
{{if $.Windows}}<h2>Windows</h2>
<ul id="windows">
{{range $w := $.Windows}}<li>{{$w.Path}} ({{$w.Run.Status}}){{with $w.Run.Files.HTMLReport}} <a href="run/{{$w.Path}}/{{.}}">report</a>{{end}}</li>
{{end}}</ul>{{end}}
{{if .Files.Flames}}<h2>Flame graphs</h2>
<ul id="flames">
{{range .Files.Flames}}<li><a href="run/{{.Path}}">{{.Title}}</a> ({{.Path}})</li>
{{end}}</ul>{{end}}
{{end}}<h2>Profiles</h2>
<table id="profiles">
<tr><th>profile</th><th>kind</th><th>covers</th><th>views</th></tr>
{{range .Profiles}}<tr><td>{{.Name}}</td><td>{{.Kind}}</td><td>{{.Semantics}}</td><td class="links">{{if .Empty}}<span class="empty">no samples</span>{{else}}<a class="pprof" href="pprof/{{.Name}}/">pprof</a>{{if not $.Embedded}}<a href="pprof/{{.Name}}/source">pprof source</a>{{end}}<a class="flame" href="flamegraph/{{.Name}}">flame graph</a>{{end}}{{if $.Run}}<a href="run/{{.Path}}">download</a>{{end}}</td></tr>
{{end}}</table>
{{if .Files}}<h2>Files</h2>
<table id="files">
{{range .Files}}<tr><td><a href="run/{{.Path}}">{{.Path}}</a></td><td>{{.Size}}</td></tr>
{{end}}</table>{{end}}
</body>
</html>
`))

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	summary := result.FileName
	if s.dir != "" {
		if _, err := os.Stat(filepath.Join(s.dir, result.CompressedFileName)); err == nil {
			summary = result.CompressedFileName
		}
	}
	data := indexData{Title: s.title, Run: s.run, Capture: s.opts.Capture, Summary: summary, Windows: s.windows, Embedded: s.opts.Embedded}
	for _, p := range s.profiles {
		data.Profiles = append(data.Profiles, indexProfile{Profile: p, Empty: !s.hasSamples(p)})
	}
	if s.run != nil {
		data.Findings = findingsOf(s.run)
		data.Missing = lines(readSmall(s.dir, "missing.txt"))
		data.Comparison = readSmall(s.dir, "compare.md")
		// Linked when it is served: under the rules of /run/.
		if f, _, err := webguard.OpenFile(s.dir, "compare.json"); err == nil {
			f.Close()
			data.ComparisonJSON = true
		}
		data.Files = filesOf(s.dir)
	}
	if err := indexTemplate.Execute(&buf, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// indexProfile is a profile as the index lists it.
type indexProfile struct {
	Profile
	// Empty says the profile has no samples: nothing to draw, its views
	// are not linked.
	Empty bool
}

// hasSamples reports whether p has samples, reading it once; a profile
// that cannot be read counts as having some (its views say what is
// wrong).
func (s *Server) hasSamples(p Profile) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.sampled[p.Name]; ok {
		return v
	}
	prof, err := s.load(p)
	v := err != nil || len(prof.Sample) > 0
	if s.sampled == nil {
		s.sampled = map[string]bool{}
	}
	s.sampled[p.Name] = v
	return v
}

// report draws the run's report from its result, for a run kept without
// report.html (a stored one): the tables, charts and findings; the flame
// graphs are a link away.
func (s *Server) report(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	// The page is served beside run/, not in it.
	if err := report.HTMLAt(&buf, s.run, nil, "run/"); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

func readProfile(path string, maxDecompressed int64) (*profile.Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	return parseProfile(path, data, maxDecompressed)
}

func parseProfile(path string, data []byte, maxDecompressed int64) (*profile.Profile, error) {
	p, err := pprofx.Parse(data, maxDecompressed)
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", path, err)
	}
	return p, nil
}

// insideDir reports whether rel, a slash-separated path, is a directory
// inside dir once symlinks are followed.
func insideDir(dir, rel string) bool {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return false
	}
	defer root.Close()
	st, err := root.Stat(rel)
	return err == nil && st.IsDir()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// profileName turns a profile's path into a name for URLs: its base name
// without .pb.gz, .pprof and the like, made unique among taken.
func profileName(path string, taken map[string]bool) string {
	base := filepath.Base(filepath.FromSlash(path))
	for _, ext := range []string{".gz", ".pb", ".pprof", ".prof"} {
		base = strings.TrimSuffix(base, ext)
	}
	base = strings.Trim(unsafeName.ReplaceAllString(base, "_"), ".")
	if base == "" {
		base = "profile"
	}
	name := base
	for i := 2; taken[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	if taken != nil {
		taken[name] = true
	}
	return name
}

// localPath reports whether a run's relative path stays inside it.
func localPath(p string) bool {
	return p != "" && filepath.IsLocal(filepath.FromSlash(p))
}

// kindOf names a profile's kind from its sample types.
func kindOf(p *profile.Profile) string {
	types := pprofx.Types(p)
	for _, t := range types {
		switch t {
		case "inuse_space", "alloc_space":
			return "heap"
		case "cpu":
			return "cpu"
		case "contentions", "delay":
			return "contention"
		case "goroutine":
			return "goroutine"
		}
	}
	return strings.Join(types, ",")
}
