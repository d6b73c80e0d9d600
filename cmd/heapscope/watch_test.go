package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/storetest"
	"github.com/heapscope/heapscope/internal/testserver"
)

func TestWatch_usageErrors(t *testing.T) {
	data := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "heapscope.yaml")
	os.WriteFile(cfg, []byte("groups:\n  - name: api\n    static:\n      - targets: [127.0.0.1:6060]\n    evry: 5m\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no store", []string{"watch", "http://127.0.0.1:6060"}, "--data DIR is required"},
		{"no targets", []string{"watch", "--data", data}, "watch needs targets: URLs, or --config FILE"},
		{"config and URLs", []string{"watch", "--data", data, "--config", cfg, "http://127.0.0.1:6060"}, "not both"},
		{"flag of the URL form with a config", []string{"watch", "--data", data, "--config", cfg, "--every", "5m"}, "--every goes with URLs; with --config set it in the file"},
		{"bad trigger", []string{"watch", "--data", data, "http://127.0.0.1:6060", "--trigger", "memory>=80"}, `--trigger: trigger "memory>=80"`},
		{"pid with two URLs", []string{"watch", "--data", data, "--pid", "42", "http://127.0.0.1:6060", "http://127.0.0.1:6061"}, "--pid names one process"},
		{"window past every", []string{"watch", "--data", data, "http://127.0.0.1:6060", "--every", "10s", "--window", "30s"}, "--window"},
		{"timeout with a config", []string{"watch", "--data", data, "--config", cfg, "--timeout", "5s"}, "--timeout goes with URLs; with --config set it in the file"},
		{"zero timeout", []string{"watch", "--data", data, "http://127.0.0.1:6060", "--timeout", "0s"}, "--timeout 0s: give a positive duration"},
		{"bad log format", []string{"watch", "--data", data, "http://127.0.0.1:6060", "--log-format", "xml"}, `--log-format "xml"`},
		{"unknown key in the config", []string{"watch", "--data", data, "--config", cfg}, "heapscope.yaml:5: groups[0].evry: unknown key (did you mean every?)"},
		{"history without a store", []string{"history"}, "--data DIR is required"},
		{"history of a directory that is no store", []string{"history", "--data", t.TempDir()}, "is not a heapscope store"},
		{"store check without a store", []string{"store", "check", "--data", filepath.Join(data, "none")}, "is not a heapscope store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantUsageError(t, heapscope(t, tt.args...), tt.want)
		})
	}
}

func TestWatch_onceThenHistory(t *testing.T) {
	svc, err := startExample(t.Context(), "leaky")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	data := t.TempDir()
	got := heapscope(t, "watch", svc.URL, "--data", data, "--once", "--window", "1s", "--log-format", "json")
	if got.code != exitOK {
		t.Fatalf("watch --once: exit %d: %s", got.code, got.stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(got.stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("--log-format json wrote a line that is not JSON: %q", line)
		}
	}
	hist := heapscope(t, "history", "--data", data, "--format", "json")
	if hist.code != exitOK {
		t.Fatalf("history: exit %d: %s", hist.code, hist.stderr)
	}
	var h struct {
		Runs, Bundles, Findings []struct {
			Target string    `json:"target"`
			Time   time.Time `json:"time"`
			Path   string    `json:"path"`
		}
	}
	if err := json.Unmarshal([]byte(hist.stdout), &h); err != nil {
		t.Fatalf("history --format json: %v\n%s", err, hist.stdout)
	}
	if len(h.Runs) != 1 || h.Bundles == nil || h.Findings == nil {
		t.Fatalf("history: %d runs, bundles %v, findings %v; want one run and both lists present", len(h.Runs), h.Bundles, h.Findings)
	}
	r := h.Runs[0]
	if !strings.Contains(r.Target, strings.TrimPrefix(svc.URL, "http://")) || r.Time.IsZero() {
		t.Errorf("run %+v: want the target and its time", r)
	}
	if _, err := os.Stat(filepath.Join(data, r.Path, "result.json.gz")); err != nil {
		t.Errorf("history's path does not lead to the run: %v", err)
	}
	diag := heapscope(t, "diagnose", "--data", data, "--target", svc.URL, "--since", "1d")
	if diag.code != exitOK || !strings.Contains(diag.stdout, "heap after GC over 1 stored run (") {
		t.Errorf("diagnose --data: exit %d: %s%s", diag.code, diag.stdout, diag.stderr)
	}
	if check := heapscope(t, "store", "check", "--data", data); check.code != exitOK || !strings.Contains(check.stdout, "0 problems") {
		t.Errorf("store check: exit %d: %s%s", check.code, check.stdout, check.stderr)
	}
}

// TestWatch_killedAtRandomLeavesNoHalfRun kills watch with SIGKILL at
// random points of its captures, many times over, then checks the store
// as a user would: every run the index lists is whole, and no half-written
// run is visible. The last round ends with SIGTERM, which must stop watch
// within seconds and leave nothing in progress.
func TestWatch_killedAtRandomLeavesNoHalfRun(t *testing.T) {
	if testing.Short() {
		t.Skip("kills watch 12 times over about 20 s")
	}
	bin, err := exampleExecutable()
	if err != nil {
		t.Fatal(err)
	}
	svc, err := startExample(t.Context(), "leaky")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	data := t.TempDir()
	rng := rand.New(rand.NewPCG(testserver.Seed(t), 1))
	start := func() (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, "watch", svc.URL, "--data", data, "--every", "1s", "--window", "300ms")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &stderr
	}
	const rounds = 12
	for range rounds {
		cmd, _ := start()
		time.Sleep(time.Duration(300+rng.IntN(1700)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	cmd, stderr := start()
	time.Sleep(2500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("watch after SIGTERM: %v\n%s", err, stderr)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("watch did not stop within 10 s of SIGTERM\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("watch did not say it stopped:\n%s", stderr)
	}

	check := heapscope(t, "store", "check", "--data", data)
	if check.code != exitOK {
		t.Fatalf("store check after %d kills: exit %d\n%s%s", rounds, check.code, check.stdout, check.stderr)
	}
	hist := heapscope(t, "history", "--data", data, "--format", "json", "--limit", "0")
	var h struct {
		Runs []struct {
			Path string `json:"path"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(hist.stdout), &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) < 3 {
		t.Fatalf("only %d runs survived %d rounds of about a second each and 2.5 s of a last round", len(h.Runs), rounds)
	}
	for _, r := range h.Runs {
		if _, err := os.Stat(filepath.Join(data, r.Path, "result.json.gz")); err != nil {
			t.Errorf("indexed run %s is not whole: %v", r.Path, err)
		}
	}
	left, _ := os.ReadDir(filepath.Join(data, ".tmp"))
	if len(left) > 0 {
		t.Errorf("captures in progress left after a clean stop: %d in .tmp", len(left))
	}
	t.Logf("%d kills, then SIGTERM: %d runs indexed, all whole", rounds, len(h.Runs))
}

func TestWatch_onceWithAnUnreachableTargetIsPartial(t *testing.T) {
	got := heapscope(t, "watch", "http://127.0.0.1:1", "--data", t.TempDir(), "--once", "--window", "1s")
	if got.code != exitPartial || !strings.Contains(got.stderr, "127.0.0.1:1") || !strings.Contains(got.stderr, "connection refused") {
		t.Errorf("watch --once of a dead target: exit %d, stderr %q; want %d naming the target and why", got.code, got.stderr, exitPartial)
	}
}

// TestStoreCheck_changesNothingWithoutRepair stores a run with a real
// profile, cuts the profile short and leaves a capture's leftover under
// .tmp: store check names both, counts them, fails and changes nothing;
// --repair removes the leftover and marks the run partial, and the
// profile stays as it was.
func TestStoreCheck_changesNothingWithoutRepair(t *testing.T) {
	data := t.TempDir()
	st, err := store.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(t.TempDir(), "run")
	storetest.WriteFixture(t, storetest.Leaky, run)
	var profile bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&profile, 0); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(run, "profiles"), 0o755)
	if err := os.WriteFile(filepath.Join(run, "profiles", "heap-000.pb.gz"), profile.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := st.Ingest(run, store.Entry{Target: "http://127.0.0.1:6060"})
	if err != nil || e.Status != "complete" {
		t.Fatalf("ingest: %+v %v", e, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(data, e.Path, "profiles", "heap-000.pb.gz")
	if err := os.WriteFile(broken, profile.Bytes()[:profile.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(data, ".tmp", "run-0123456789abcdef")
	if err := os.MkdirAll(filepath.Join(leftover, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}

	for range 2 { // checked twice, found twice
		check := heapscope(t, "store", "check", "--data", data)
		if check.code != exitGateFailed || !strings.Contains(check.stdout, "2 problems found, 0 repaired") ||
			!strings.Contains(check.stdout, e.Path+"/profiles/heap-000.pb.gz") || !strings.Contains(check.stdout, ".tmp/run-0123456789abcdef") {
			t.Fatalf("store check: exit %d\n%s%s\nwant exit %d naming the profile and the leftover", check.code, check.stdout, check.stderr, exitGateFailed)
		}
		if _, err := os.Stat(leftover); err != nil {
			t.Fatalf("store check without --repair removed the leftover: %v", err)
		}
	}
	hist := heapscope(t, "history", "--data", data, "--format", "json")
	if !strings.Contains(hist.stdout, `"status": "complete"`) && !strings.Contains(hist.stdout, `"status":"complete"`) {
		t.Errorf("store check without --repair changed the run's status:\n%s", hist.stdout)
	}

	repair := heapscope(t, "store", "check", "--data", data, "--repair")
	if repair.code != exitGateFailed || !strings.Contains(repair.stdout, "1 repaired") || !strings.Contains(repair.stdout, "now indexed as partial") {
		t.Errorf("store check --repair: exit %d\n%s%s", repair.code, repair.stdout, repair.stderr)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the leftover after --repair: %v", err)
	}
	if got, err := os.ReadFile(broken); err != nil || !bytes.Equal(got, profile.Bytes()[:profile.Len()/2]) {
		t.Errorf("--repair changed the broken profile (%v)", err)
	}
	hist = heapscope(t, "history", "--data", data, "--format", "json")
	if strings.Contains(hist.stdout, `complete"`) || !strings.Contains(hist.stdout, `partial"`) {
		t.Errorf("history after --repair still calls the run complete:\n%s", hist.stdout)
	}
}
