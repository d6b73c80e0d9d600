package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ExecToolchain is the Toolchain that runs git and go from PATH.
type ExecToolchain struct {
	// Env is the commands' environment; nil means this process's.
	Env []string
}

var _ Toolchain = ExecToolchain{}

// Toplevel implements Toolchain with git rev-parse --show-toplevel.
func (t ExecToolchain) Toplevel(ctx context.Context, dir string) (string, error) {
	out, err := t.run(ctx, dir, "git", "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// AddWorktree implements Toolchain with git worktree add --detach; the
// function it returns runs git worktree remove --force and deletes the
// temporary directory, even after ctx is done.
func (t ExecToolchain) AddWorktree(ctx context.Context, repo, ref string) (string, func() error, error) {
	if _, err := t.run(ctx, repo, "git", "rev-parse", "--verify", "--quiet", ref+"^{commit}"); err != nil {
		if ctx.Err() != nil {
			return "", nil, ctx.Err()
		}
		return "", nil, fmt.Errorf("%q is not a commit of the repository at %s (a shallow clone may not have it: git fetch --deepen=1)", ref, repo)
	}
	tmp, err := os.MkdirTemp("", "heapscope-base-")
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(tmp, "tree")
	if _, err := t.run(ctx, repo, "git", "worktree", "add", "--detach", "--quiet", dir, ref); err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	remove := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := t.run(ctx, repo, "git", "worktree", "remove", "--force", dir)
		if err != nil {
			_, _ = t.run(ctx, repo, "git", "worktree", "prune")
		}
		return errors.Join(err, os.RemoveAll(tmp))
	}
	return dir, remove, nil
}

// Test implements Toolchain.
func (t ExecToolchain) Test(ctx context.Context, dir string, args []string) ([]byte, error) {
	return t.run(ctx, dir, "go", append([]string{"test"}, args...)...)
}

// MemProfile implements Toolchain. The test binary and the profile go to
// a temporary directory, removed before it returns.
func (t ExecToolchain) MemProfile(ctx context.Context, dir, pkg string, args []string) ([]byte, []byte, error) {
	tmp, err := os.MkdirTemp("", "heapscope-memprofile-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	prof := filepath.Join(tmp, "mem.pprof")
	full := append([]string{"test"}, args...)
	full = append(full, "-memprofile", prof, "-memprofilerate", "1", "-o", filepath.Join(tmp, "bench.test"), pkg)
	out, err := t.run(ctx, dir, "go", full...)
	if err != nil {
		return out, nil, err
	}
	data, err := os.ReadFile(prof)
	if err != nil {
		return out, nil, fmt.Errorf("read the profile of go test -memprofile: %w", err)
	}
	return out, data, nil
}

// run runs a command in dir and returns its standard output. Its error
// ends with the last lines the command printed.
func (t ExecToolchain) run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = t.Env
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return stdout.Bytes(), ctx.Err()
		}
		tail := lastLines(stderr.String(), 6)
		if tail == "" {
			tail = lastLines(stdout.String(), 6)
		} else if failed := lastLines(stdout.String(), 6); strings.Contains(failed, "FAIL") {
			tail = failed + "\n" + tail
		}
		if tail != "" {
			tail = ":\n" + tail
		}
		return stdout.Bytes(), fmt.Errorf("%s %s in %s: %w%s", name, strings.Join(args, " "), dir, err, tail)
	}
	return stdout.Bytes(), nil
}

// lastLines returns the last n non-empty lines of s, indented.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = "    " + strings.TrimRight(l, "\r ")
	}
	out := strings.Join(lines, "\n")
	if strings.TrimSpace(out) == "" {
		return ""
	}
	return out
}
