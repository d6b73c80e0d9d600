package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/testserver"
)

// The README's promise: every command shown in README.md and
// examples/README.md runs as it stands, in order, in one shell, and says
// what the prose around it says. TestREADME runs them all, each against a
// check of its own below; a command on the page without a check, or a
// check whose command left the page, fails the test.

// root is the module's root, relative to this package.
const root = ".."

// outcome is what a command of the README must do.
type outcome struct {
	// background: the command ends in & and starts a service that must
	// listen on the given address.
	background bool
	// serves: the command runs until stopped and serves a page at the
	// URL it prints; the check fetches it, then stops the command.
	serves bool
	// check inspects a command's output (stdout and stderr together) and
	// the session's directory.
	check func(t *testing.T, out, dir string)
}

// cacheAppend is the line of the leaky cache's leak.
func cacheAppend(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "examples", "leakycache", "leakycache.go"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "w.cache[id] = append(w.cache[id], b...)") {
			return "leakycache.go:" + strconv.Itoa(i+1)
		}
	}
	t.Fatal("leakycache.go has no cache append")
	return ""
}

// says fails unless out contains every one of want.
func says(want ...string) func(t *testing.T, out, dir string) {
	return func(t *testing.T, out, dir string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("output does not say %q:\n%s", w, out)
			}
		}
	}
}

// leadFinding fails unless the first finding of a summary is high and at
// the leaky cache's append.
func leadFinding(t *testing.T, out, dir string) {
	t.Helper()
	_, after, ok := strings.Cut(out, "Findings (")
	if !ok {
		t.Fatalf("no findings in:\n%s", out)
	}
	lines := strings.Split(after, "\n")
	if len(lines) < 2 || !strings.Contains(lines[1], "HIGH") || !strings.Contains(lines[1], cacheAppend(t)) {
		t.Errorf("the lead finding is not a HIGH one at %s:\n%s", cacheAppend(t), out)
	}
}

// heapShrank fails unless compare's table shows the heap in use fell.
func heapShrank(t *testing.T, out, dir string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 3 && strings.HasPrefix(strings.TrimSpace(line), "heap in use") {
			if !strings.HasPrefix(f[len(f)-1], "-") {
				t.Errorf("the heap in use did not fall from the leaky cache to the bounded one: %q", line)
			}
			return
		}
	}
	t.Errorf("compare shows no heap in use:\n%s", out)
}

// onlyRun reads the one run whose result.json the glob pattern, relative
// to dir, matches.
func onlyRun(t *testing.T, dir, pattern string) *result.Run {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(dir, pattern, result.FileName))
	if err != nil || len(found) != 1 {
		t.Fatalf("%d runs match %s, want 1 (%v)", len(found), pattern, err)
	}
	res, err := rundir.Read(filepath.Dir(found[0]))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// exactLeak fails unless the run of the leaky cache gives the leak at the
// cache's append with the live heap's growth read exactly and the samples
// that place it there.
func exactLeak(t *testing.T, out, dir string) {
	t.Helper()
	res := onlyRun(t, dir, "heapscope-runs/127.0.0.1_*") // not the demo's
	for _, f := range res.Findings {
		if f.ID == "leak.inuse-growth" && filepath.Base(f.File)+":"+strconv.FormatInt(f.Line, 10) == cacheAppend(t) {
			if !strings.Contains(f.Title, "exact") || f.Evidence["site_samples"] <= 0 {
				t.Errorf("the leak %q (evidence %v) does not give the exact growth and the samples behind its site", f.Title, f.Evidence)
			}
			return
		}
	}
	t.Errorf("no leak.inuse-growth at %s in %s", cacheAppend(t), describeAll(res.Findings))
}

// quietRun fails unless the run under sub has nothing of medium or above
// (GC pauses aside: a short window's pauses are the machine's).
func quietRun(sub string) func(t *testing.T, out, dir string) {
	return func(t *testing.T, out, dir string) {
		t.Helper()
		res := onlyRun(t, dir, filepath.Join(sub, "*"))
		for _, f := range res.Findings {
			if diagnose.SeverityOf(f) >= diagnose.Medium && f.ID != "gc.pause" {
				t.Errorf("the fixed cache's run is not quiet: %s", describeAll(res.Findings))
				return
			}
		}
	}
}

func describeAll(fs []result.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("\n  " + f.Severity + " " + f.ID + ": " + f.Title)
	}
	return b.String()
}

func fileHolds(name, want string) func(t *testing.T, out, dir string) {
	return func(t *testing.T, out, dir string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Contains(data, []byte(want)) {
			t.Errorf("%s: err %v, want it to hold %q", name, err, want)
		}
	}
}

func all(checks ...func(t *testing.T, out, dir string)) func(t *testing.T, out, dir string) {
	return func(t *testing.T, out, dir string) {
		t.Helper()
		for _, c := range checks {
			c(t, out, dir)
		}
	}
}

// outcomes maps each command of the READMEs, as printed, to its check.
var outcomes = map[string]outcome{
	// README.md
	"go install ./cmd/heapscope": {check: func(t *testing.T, out, dir string) {
		if _, err := os.Stat(filepath.Join(dir, "bin", "heapscope")); err != nil {
			t.Errorf("go install left no heapscope in GOBIN: %v\n%s", err, out)
		}
	}},
	"go run ./cmd/heapscope demo": {check: all(leadFinding, says("report.md", "report.html"))},
	"bash scripts/test.sh":        {}, // TestTestScript_namesWhatIsMissing
	"go run ./examples/leakycache/cmd/leakycache --addr 127.0.0.1:6060 &":         {background: true},
	"go run ./examples/optimizedcache/cmd/optimizedcache --addr 127.0.0.1:6061 &": {background: true},
	"heapscope profile http://127.0.0.1:6060 --duration 30s --load 'GET /process?id=user-{rand:100000}' --rate 500": {
		check: all(leadFinding, says("a map that only grows", "bound the map"), exactLeak)},
	"curl -s -o allocs.pb.gz http://127.0.0.1:6060/debug/pprof/allocs":                                                {check: fileHolds("allocs.pb.gz", "\x1f\x8b")},
	"heapscope diagnose allocs.pb.gz --all":                                                                           {check: says("allocation hot spot at leakycache.", "since the process started")},
	"heapscope flame allocs.pb.gz -o allocs.html":                                                                     {check: fileHolds("allocs.html", "leakycache.(*Worker).Process")},
	"heapscope view heapscope-runs/127.0.0.1_6060-*":                                                                  {serves: true},
	"heapscope profile http://127.0.0.1:6060 --duration 10s --load 'GET /process?id=user-{rand:100000}' --out before": {},
	"heapscope profile http://127.0.0.1:6061 --duration 10s --load 'GET /process?id=user-{rand:100000}' --out after":  {check: quietRun("after")},
	"heapscope compare before/* after/*":                                                                              {check: all(says("bytes per request", "site"), heapShrank)},
	"go test -run '^$' -bench Worker -benchmem -count 10 -benchtime 20000x ./examples/leakycache > old.txt":           {check: fileHolds("old.txt", "BenchmarkWorker_Process")},
	"go test -run '^$' -bench Worker -benchmem -count 10 -benchtime 20000x ./examples/optimizedcache > new.txt":       {check: fileHolds("new.txt", "BenchmarkWorker_Process")},
	"heapscope bench compare old.txt new.txt --ignore pkg --fail-on 'B/op>+5%'":                                       {check: says("Worker_Process", "B/op", "no gate failed")},
	"heapscope watch http://127.0.0.1:6060 --data watch-data --once":                                                  {check: says("msg=captured", "kind=run", "status=complete")},
	"heapscope history --data watch-data":                                                                             {check: says("Runs (1)", "/debug/pprof/", "runs/127.0.0.1_")},

	// examples/README.md
	"go run ./examples/leakycache/cmd/leakycache --addr 127.0.0.1:6060 & # examples":                       {background: true},
	"curl 'http://127.0.0.1:6060/process?id=user-1'":                                                       {check: says("user-1")},
	"go test -run '^$' -bench . -benchmem -count 10 -benchtime 20000x ./examples/leakycache > old.txt":     {check: fileHolds("old.txt", "BenchmarkHandler_Process")},
	"go test -run '^$' -bench . -benchmem -count 10 -benchtime 20000x ./examples/optimizedcache > new.txt": {check: fileHolds("new.txt", "BenchmarkHandler_Process")},
	"heapscope bench compare old.txt new.txt --ignore pkg":                                                 {check: says("Worker_Process", "Handler_Process", "B/op")},
}

func TestREADME(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the README's commands are for Linux")
	}
	bins := buildCommands(t)
	for _, page := range []string{"README.md", filepath.Join("examples", "README.md")} {
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join(root, page))
			if err != nil {
				t.Fatal(err)
			}
			s := newSession(t, bins)
			for _, cmd := range commands(string(data)) {
				key := cmd
				if _, ok := outcomes[key+" # examples"]; ok && page != "README.md" {
					key += " # examples"
				}
				o, ok := outcomes[key]
				if !ok {
					t.Errorf("%s shows %q, which no check of this test runs: add one to outcomes", page, cmd)
					continue
				}
				if !s.run(cmd, o) {
					return
				}
			}
		})
	}
}

// TestREADME_everyCheckHasItsCommand fails on a check whose command left
// the pages.
func TestREADME_everyCheckHasItsCommand(t *testing.T) {
	shown := map[string]bool{}
	for _, page := range []string{"README.md", filepath.Join("examples", "README.md")} {
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range commands(string(data)) {
			if page != "README.md" {
				if _, ok := outcomes[cmd+" # examples"]; ok {
					cmd += " # examples"
				}
			}
			shown[cmd] = true
		}
	}
	for cmd := range outcomes {
		if !shown[cmd] {
			t.Errorf("outcomes checks %q, which no README shows any more", cmd)
		}
	}
}

// commands returns the commands of a page's sh blocks, continuation lines
// joined, comments and blank lines left out.
func commands(page string) []string {
	var out []string
	in := false
	var cur string
	for _, line := range strings.Split(page, "\n") {
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
			continue
		case strings.HasPrefix(line, "```"):
			in = false
			continue
		case !in:
			continue
		}
		line = strings.TrimSpace(line)
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			cur += strings.TrimSpace(cont) + " "
			continue
		}
		line = strings.TrimSpace(cur + line)
		cur = ""
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// buildCommands builds heapscope and the example services once, as go run
// would, and returns their paths by the package path the READMEs use.
func buildCommands(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	bins := map[string]string{}
	for _, pkg := range []string{"./cmd/heapscope", "./examples/leakycache/cmd/leakycache", "./examples/optimizedcache/cmd/optimizedcache"} {
		bin := filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
		bins[pkg] = bin
	}
	return bins
}

// session is one shell's worth of README commands: one working directory,
// the services started in the background, ports mapped to free ones.
type session struct {
	t     *testing.T
	dir   string
	bins  map[string]string
	ports map[string]string // README port → free port
	root  string
	// services are the ones started in the background, with what they
	// said on stderr.
	services []service
}

type service struct {
	readme string
	stderr *testserver.Buffer
}

func newSession(t *testing.T, bins map[string]string) *session {
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, dir: t.TempDir(), bins: bins, ports: map[string]string{}, root: abs}
}

var (
	// readmePort matches the README's ports in URLs (127.0.0.1:6060) and
	// in run directories' names (127.0.0.1_6060-…).
	readmePort = regexp.MustCompile(`127\.0\.0\.1[:_](60[0-9][0-9])`)
	servingURL = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/\S*`)
	// listenAddr is the address a service of the README is told to
	// listen on, once its port is mapped.
	listenAddr = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
)

// shell rewrites a README command into what this machine runs: go run of
// a package becomes its built binary, heapscope the built one, go test and
// go install run in the module, and the README's ports become free ones.
func (s *session) shell(cmd string) string {
	cmd = readmePort.ReplaceAllStringFunc(cmd, func(m string) string {
		host, p := m[:len("127.0.0.1:")], m[len("127.0.0.1:"):]
		if s.ports[p] == "" {
			s.ports[p] = strconv.Itoa(testserver.Port(s.t))
		}
		return host + s.ports[p]
	})
	for pkg, bin := range s.bins {
		cmd = strings.ReplaceAll(cmd, "go run "+pkg, bin)
	}
	if rest, ok := strings.CutPrefix(cmd, "heapscope "); ok {
		cmd = s.bins["./cmd/heapscope"] + " " + rest
	}
	cmd = strings.Replace(cmd, "go test ", "go -C "+s.root+" test ", 1)
	if rest, ok := strings.CutPrefix(cmd, "go install "); ok {
		cmd = "GOBIN=" + filepath.Join(s.dir, "bin") + " go -C " + s.root + " install " + rest
	}
	return cmd
}

// run runs one command and checks it; false stops the session.
func (s *session) run(readme string, o outcome) bool {
	t := s.t
	t.Helper()
	if readme == "bash scripts/test.sh" {
		return true // the suite itself: TestTestScript_namesWhatIsMissing runs its preflight
	}
	line := s.shell(strings.TrimSuffix(strings.TrimSuffix(readme, "&"), " "))
	switch {
	case o.background:
		s.background(readme, line)
		return !t.Failed()
	case o.serves:
		s.serve(readme, line)
		return true
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir = s.dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s: %s", readme, time.Since(start).Round(time.Second))
	if err != nil {
		t.Errorf("%s: %v\n%s", readme, err, out)
		for _, svc := range s.services {
			t.Logf("service %s: %s", svc.readme, svc.stderr.String())
		}
		return false
	}
	if o.check != nil {
		o.check(t, string(out), s.dir)
	}
	return true
}

// background starts a service and waits for it to listen; the test stops
// it by its PID at the end.
func (s *session) background(readme, line string) {
	t := s.t
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir = s.dir
	stderr := new(testserver.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", readme, err)
	}
	s.services = append(s.services, service{readme: readme, stderr: stderr})
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	addr := listenAddr.FindString(line)
	if addr == "" {
		return
	}
	// The service says where it listens: another process may have taken
	// the free port first, so a connection alone proves nothing.
	deadline := time.After(20 * time.Second)
	for !strings.Contains(stderr.String(), "listening on http://"+addr) {
		select {
		case <-exited:
			t.Errorf("%s: exited before it listened on %s; stderr: %s", readme, addr, stderr.String())
			return
		case <-deadline:
			t.Errorf("%s: it did not say it listens on %s within 20 s; stderr: %s", readme, addr, stderr.String())
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// serve starts a command that serves until stopped, fetches the URL it
// prints, and stops it.
func (s *session) serve(readme, line string) {
	t := s.t
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir = s.dir
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", readme, err)
	}
	pw.Close()
	defer func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
		pr.Close()
	}()
	urls := make(chan string, 1)
	var printed strings.Builder // written before urls is closed
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			printed.WriteString(sc.Text() + "\n")
			if u := servingURL.FindString(sc.Text()); u != "" {
				urls <- u
				break
			}
		}
		for sc.Scan() {
		}
		close(urls)
	}()
	select {
	case u, ok := <-urls:
		if !ok {
			t.Errorf("%s: printed no URL (%v):\n%s", readme, cmd.Wait(), printed.String())
			return
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Errorf("%s: GET %s: %v", readme, u, err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: GET %s: %s", readme, u, resp.Status)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("%s: printed no URL in 20 s", readme)
	}
}

// TestTestScript_namesWhatIsMissing runs the README's test command on a
// machine without the packages it needs, as a user who is not root: it
// stops within seconds and names the apt-get line to run.
func TestTestScript_namesWhatIsMissing(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// A directory anyone can read, holding the script and a bin with go
	// and the shell's basics, and none of make, gcc, chromium.
	dir, err := os.MkdirTemp("", "heapscope-test-script-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{dir, bin, filepath.Join(dir, "scripts")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "test.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"bash", "sed", "id", "dirname"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(goBin, filepath.Join(bin, "go")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "bash"), filepath.Join(dir, "scripts", "test.sh"))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + bin, "HOME=" + dir}
	if os.Getuid() == 0 {
		// As a user who cannot install packages.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("scripts/test.sh: %v, want exit 2\n%s", err, out)
	}
	for _, want := range []string{"make", "gcc", "chromium", "apt-get install -y"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("scripts/test.sh says %q, want it to name %q", out, want)
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("scripts/test.sh took %s to stop, want seconds", took)
	}
}
