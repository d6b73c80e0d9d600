package allocbench

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/heapscope/heapscope/internal/sysmem"
)

//go:embed child/main.go
var childSource []byte

// childGoMod is the child module's go.mod: a go line old enough for every
// toolchain the lab is likely to be asked for, so that none refuses it or
// switches to another.
const childGoMod = "module allocbenchchild\n\ngo 1.21\n"

// LocalToolchain names the installed go command's own toolchain.
const LocalToolchain = "local"

var toolchainName = regexp.MustCompile(`^go1\.[0-9]+(\.[0-9]+)?((rc|beta)[0-9]+)?$`)

// ParseToolchains splits a comma-separated list of toolchains, "local" or
// release names such as go1.24.3, checking their syntax. Whether a release
// exists is only known once the go command tries to fetch it (Lab.Prepare).
func ParseToolchains(list string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if f != LocalToolchain && !toolchainName.MatchString(f) {
			return nil, fmt.Errorf("toolchain %q: want local or a Go release such as go1.24.3", f)
		}
		if seen[f] {
			return nil, fmt.Errorf("toolchain %s is listed twice", f)
		}
		seen[f] = true
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, errors.New("no toolchain given: want a list such as go1.23.12,go1.24.3,go1.25.0 or local")
	}
	return out, nil
}

// ToolchainError reports a toolchain the go command could not fetch or
// run, with what it said.
type ToolchainError struct {
	// Toolchain is the name asked for.
	Toolchain string
	// Output is the go command's last line of output.
	Output string
	// Err is the error of running it.
	Err error
}

func (e *ToolchainError) Error() string {
	return fmt.Sprintf("toolchain %s is not available (does that release exist? the go command fetches it from the module proxy): %s", e.Toolchain, e.Output)
}

func (e *ToolchainError) Unwrap() error { return e.Err }

// Lab builds the child program under toolchains and runs patterns in it.
// The zero value is not usable: Dir must name a directory the lab may
// write to.
type Lab struct {
	// Dir is a working directory; each toolchain gets a module in a
	// subdirectory.
	Dir string
	// Go is the go command; "go" when empty.
	Go string
	// Env is the environment of the go command and of the children;
	// os.Environ() when nil. GOGC, GOMEMLIMIT and GODEBUG are removed
	// from the children's, so every run sees the runtime's defaults.
	Env []string
	// Proc reads the children's /proc files.
	Proc sysmem.Proc
	// Live is how many bytes a pattern keeps live; DefaultLive when 0.
	Live int
	// Timeout bounds one child run; one minute when 0.
	Timeout time.Duration
}

// Build is the child program built with one toolchain.
type Build struct {
	// Toolchain is the name asked for.
	Toolchain string
	// GoVersion is the toolchain's version, such as go1.24.3.
	GoVersion string
	// Binary is the path of the built program.
	Binary string

	lab *Lab
}

func (l *Lab) env() []string {
	if l.Env != nil {
		return l.Env
	}
	return os.Environ()
}

// goEnv is the go command's environment for toolchain.
func (l *Lab) goEnv(toolchain string) []string {
	env := withoutVars(l.env(), "GOTOOLCHAIN", "GOWORK", "CGO_ENABLED")
	return append(env, "GOTOOLCHAIN="+toolchain, "GOWORK=off", "CGO_ENABLED=0")
}

// Prepare writes the child module for toolchain and builds it, fetching
// the toolchain through the go command when it is not the local one. A
// toolchain that cannot be fetched is a *ToolchainError.
func (l *Lab) Prepare(ctx context.Context, toolchain string) (*Build, error) {
	dir := filepath.Join(l.Dir, toolchain)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("prepare toolchain %s: %w", toolchain, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(childGoMod), 0o644); err != nil {
		return nil, fmt.Errorf("prepare toolchain %s: %w", toolchain, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), childSource, 0o644); err != nil {
		return nil, fmt.Errorf("prepare toolchain %s: %w", toolchain, err)
	}
	goCmd := l.Go
	if goCmd == "" {
		goCmd = "go"
	}
	goEnv := l.goEnv(toolchain)
	// The version is go env's standard output alone: fetching a toolchain
	// prints "go: downloading …" on standard error first.
	env := exec.CommandContext(ctx, goCmd, "env", "GOVERSION")
	env.Dir, env.Env = dir, goEnv
	var stderr bytes.Buffer
	env.Stderr = &stderr
	out, err := env.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &ToolchainError{Toolchain: toolchain, Output: lastLine(append(out, stderr.Bytes()...)), Err: err}
	}
	version := lastLine(out)
	bin := filepath.Join(dir, "child")
	if out, err := l.goRun(ctx, dir, goCmd, goEnv, "build", "-o", bin, "."); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("build the child program with %s: %w: %s", toolchain, err, lastLine(out))
	}
	return &Build{Toolchain: toolchain, GoVersion: version, Binary: bin, lab: l}, nil
}

func (l *Lab) goRun(ctx context.Context, dir, goCmd string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = env
	return cmd.CombinedOutput()
}

// Run runs pattern p once in a child process and measures it: the child's
// MemStats, and its VmRSS and Go heap mappings read while it waits.
func (b *Build) Run(ctx context.Context, p Pattern) (Sample, error) {
	l := b.lab
	live := l.Live
	if live <= 0 {
		live = DefaultLive
	}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s := Sample{Pattern: p.Name(), Toolchain: b.Toolchain, GoVersion: b.GoVersion}
	cmd := exec.CommandContext(ctx, b.Binary, p.ChildArgs(live)...)
	cmd.Env = withoutVars(l.env(), "GOGC", "GOMEMLIMIT", "GODEBUG")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return s, fmt.Errorf("run %s under %s: %w", s.Pattern, b.Toolchain, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return s, fmt.Errorf("run %s under %s: %w", s.Pattern, b.Toolchain, err)
	}
	if err := cmd.Start(); err != nil {
		return s, fmt.Errorf("run %s under %s: %w", s.Pattern, b.Toolchain, err)
	}
	// However the measurement goes, the child is told to exit and
	// waited for, once; its stderr is complete only after.
	finish := sync.OnceValue(func() error {
		stdin.Close()
		return cmd.Wait()
	})
	defer finish()
	line, err := bufio.NewReader(io.LimitReader(stdout, 64<<10)).ReadBytes('\n')
	if err != nil {
		if ctx.Err() != nil {
			return s, fmt.Errorf("run %s under %s: %w", s.Pattern, b.Toolchain, ctx.Err())
		}
		werr := finish()
		return s, fmt.Errorf("run %s under %s: the child printed no figures (%v): %s", s.Pattern, b.Toolchain, werr, lastLine(stderr.Bytes()))
	}
	var f childFigures
	if err := json.Unmarshal(line, &f); err != nil {
		return s, fmt.Errorf("run %s under %s: read the child's figures: %w", s.Pattern, b.Toolchain, err)
	}
	s.HeapAlloc, s.HeapInuse, s.HeapSys, s.HeapReleased, s.Sys = f.HeapAlloc, f.HeapInuse, f.HeapSys, f.HeapReleased, f.Sys
	pid := cmd.Process.Pid
	st, err := l.Proc.Status(pid)
	if err != nil {
		return s, fmt.Errorf("run %s under %s: %w", s.Pattern, b.Toolchain, err)
	}
	s.VmRSS = st.VmRSS
	maps, err := l.Proc.Smaps(pid)
	if err != nil {
		return s, fmt.Errorf("run %s under %s: %w", s.Pattern, b.Toolchain, err)
	}
	h := sysmem.GoHeap(maps, f.HeapSys)
	s.HeapMapped, s.HeapRss = h.Size, h.Rss
	if h.Count == 0 {
		return s, fmt.Errorf("run %s under %s: no Go heap mappings found in the child's smaps: %s", s.Pattern, b.Toolchain, h.Note)
	}
	return s, nil
}

// childFigures is the JSON line the child prints.
type childFigures struct {
	GoVersion    string `json:"go_version"`
	HeapAlloc    uint64 `json:"heap_alloc"`
	HeapInuse    uint64 `json:"heap_inuse"`
	HeapSys      uint64 `json:"heap_sys"`
	HeapReleased uint64 `json:"heap_released"`
	Sys          uint64 `json:"sys"`
}

// withoutVars returns env without the variables named.
func withoutVars(env []string, names ...string) []string {
	out := make([]string, 0, len(env)+len(names))
	for _, kv := range env {
		drop := false
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// lastLine is the last non-empty line of out, for an error message.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return "(no output)"
}
