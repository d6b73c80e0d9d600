package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestContainer_imageRunsWatchStaticAsNonroot builds heapscope as the
// Dockerfile's build stage does and runs the image's command as its
// final stage would: in a root file system holding nothing but the
// binary, the mounted config and the data volume, as the image's user.
// So the binary is static (there is no loader to find), the command line
// is one watch accepts, and the unprivileged user can write its store.
// No container engine or registry is reachable here; this is the image's
// contract without the image.
func TestContainer_imageRunsWatchStaticAsNonroot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot and a change of user need root (CI runs this test as root)")
	}
	df := parseDockerfile(t, "../../Dockerfile")
	uid := df.user(t)

	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, strings.TrimPrefix(df.entrypoint[0], "/"))
	build := exec.Command("go", append([]string{"build"}, append(df.buildFlags(t), "-o", bin, ".")...)...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build as the Dockerfile does: %v\n%s", err, out)
	}

	svc, err := startExample(t.Context(), "leaky")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	args := append(df.entrypoint[1:], df.cmd...)
	config, data := flagValue(t, args, "--config"), flagValue(t, args, "--data")
	mkdir := func(dir string, owner int) {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(root, dir), owner, owner); err != nil {
			t.Fatal(err)
		}
	}
	mkdir(filepath.Dir(config), 0)
	mkdir(data, uid) // the image's volume, chowned in its final stage
	mkdir("tmp", 0)
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	yaml := "groups:\n  - name: example\n    static:\n      - targets: [" + svc.URL + "]\n    window: 1s\n"
	if err := os.WriteFile(filepath.Join(root, config), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	// The CronJob form of the image's command, on loopback.
	setFlag(t, args, "--listen", "127.0.0.1:0")
	args = append(args, "--once")
	cmd := exec.Command(df.entrypoint[0], args...)
	cmd.Env = []string{"PATH=/usr/local/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the image's command, %q: %v\n%s", cmd.Args, err, out)
	}
	runs, _ := filepath.Glob(filepath.Join(root, data, "runs", "*", "*", "result.json.gz"))
	if len(runs) != 1 {
		t.Fatalf("%d runs stored in the volume, want 1; output:\n%s", len(runs), out)
	}
	if fi, err := os.Stat(runs[0]); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
		t.Errorf("the run is not the image user's: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("the image logs a line that is not JSON: %q", line)
		}
	}
}

// dockerfile is what the test takes from the Dockerfile.
type dockerfile struct {
	lines           []string
	entrypoint, cmd []string
}

func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var df dockerfile
	// Continuation lines joined, comments dropped.
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			df.lines = append(df.lines, l)
		}
	}
	df.entrypoint = df.execForm(t, "ENTRYPOINT")
	df.cmd = df.execForm(t, "CMD")
	return df
}

// instruction is the argument of the last instruction of that name.
func (df dockerfile) instruction(t *testing.T, name string) string {
	t.Helper()
	arg := ""
	for _, l := range df.lines {
		if rest, ok := strings.CutPrefix(l, name+" "); ok {
			arg = strings.TrimSpace(rest)
		}
	}
	if arg == "" {
		t.Fatalf("the Dockerfile has no %s", name)
	}
	return arg
}

func (df dockerfile) execForm(t *testing.T, name string) []string {
	t.Helper()
	var args []string
	if err := json.Unmarshal([]byte(df.instruction(t, name)), &args); err != nil || len(args) == 0 {
		t.Fatalf("the Dockerfile's %s is not in exec form: %v", name, err)
	}
	return args
}

// user is the final stage's user: distroless' nonroot is 65532.
func (df dockerfile) user(t *testing.T) int {
	t.Helper()
	name, _, _ := strings.Cut(df.instruction(t, "USER"), ":")
	if name == "nonroot" {
		return 65532
	}
	uid, err := strconv.Atoi(name)
	if err != nil || uid == 0 {
		t.Fatalf("the image's USER %q is not an unprivileged user", name)
	}
	return uid
}

// buildFlags are the go build flags of the build stage, its VERSION
// argument left at the default.
func (df dockerfile) buildFlags(t *testing.T) []string {
	t.Helper()
	for _, l := range df.lines {
		_, cmd, ok := strings.Cut(l, "go build ")
		if !ok || !strings.Contains(l, "CGO_ENABLED=0") {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, " -o ")
		return splitQuoted(strings.ReplaceAll(cmd, "${VERSION}", "dev"))
	}
	t.Fatal("the Dockerfile builds no static binary (CGO_ENABLED=0 go build)")
	return nil
}

// splitQuoted splits a shell command's words, double quotes grouping.
func splitQuoted(s string) []string {
	var words []string
	var word strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if word.Len() > 0 {
				words = append(words, word.String())
				word.Reset()
			}
		default:
			word.WriteRune(r)
		}
	}
	if word.Len() > 0 {
		words = append(words, word.String())
	}
	return words
}

func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	t.Fatalf("the image's command %q has no %s", args, name)
	return ""
}

func setFlag(t *testing.T, args []string, name, value string) {
	t.Helper()
	for i, a := range args {
		if a == name && i+1 < len(args) {
			args[i+1] = value
			return
		}
	}
	t.Fatalf("the image's command %q has no %s", args, name)
}
