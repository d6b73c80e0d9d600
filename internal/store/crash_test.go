package store

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/atomicfile"
	"github.com/heapscope/heapscope/internal/testserver"
)

// crashChildEnv, set to a data directory, makes the test binary a child
// that stores runs there in a loop until it is killed (TestMain).
const crashChildEnv = "HEAPSCOPE_STORE_CRASH_CHILD"

// ackFile, in the crash test's directory beside the data directory, lists
// the paths of the entries whose Commit returned: the ones the store
// acknowledged.
const ackFile = "acknowledged"

// The crash child's targets: every capture of live is acknowledged and
// kept; old's are ingested with old times and removed by retention.
const (
	crashLive = "http://127.0.0.1:7001"
	crashOld  = "http://127.0.0.1:7002"
)

// crashChild stores runs in dir/data in a loop, as watch does, until it
// is killed: captures of live (runs and bundles, the result written last
// and by rename, as internal/run writes it), ingests of old at old times,
// retention removing those, and an OOM mark now and then.
func crashChild(dir string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	s, err := Open(filepath.Join(dir, "data"))
	if err != nil {
		fail(err)
	}
	ack, err := os.OpenFile(filepath.Join(dir, ackFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail(err)
	}
	resultJSON, err := os.ReadFile(filepath.Join(fixtureRoot, fixtureLeaky, "result.json"))
	if err != nil {
		fail(err)
	}
	// A real profile, of this process: the store reads every file back.
	var profile bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&profile, 0); err != nil {
		fail(err)
	}
	oldRun := filepath.Join(fixtureRoot, fixturePartial)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; ; i++ {
		kind := KindRun
		e := Entry{Time: time.Now(), Scheduled: true, Labels: map[string]string{"round": fmt.Sprint(i)}}
		if i%4 == 3 {
			kind = KindBundle
			e = Entry{Time: time.Now(), Trigger: &Trigger{Expr: "memory>=80%", Value: 0.9, Threshold: 0.8}, CaptureSeconds: 1}
		}
		p, err := s.Begin(kind, crashLive)
		if err != nil {
			fail(err)
		}
		run := filepath.Join(p.Dir(), "run")
		if err := os.MkdirAll(filepath.Join(run, "profiles"), 0o755); err != nil {
			fail(err)
		}
		// A profile first, the result last, by rename.
		if err := os.WriteFile(filepath.Join(run, "profiles", "heap-000.pb.gz"), profile.Bytes(), 0o644); err != nil {
			fail(err)
		}
		if err := atomicfile.WriteBytes(filepath.Join(run, "result.json"), resultJSON); err != nil {
			fail(err)
		}
		got, err := p.Commit(run, e)
		if err != nil {
			fail(err)
		}
		if _, err := fmt.Fprintln(ack, got.Path); err != nil {
			fail(err)
		}
		if i%3 == 0 {
			if _, err := s.Ingest(oldRun, Entry{Target: crashOld, Time: old.Add(time.Duration(i) * time.Minute)}); err != nil {
				fail(err)
			}
		}
		if i%5 == 4 {
			if _, err := s.Retain(Retention{MaxAge: 365 * 24 * time.Hour}); err != nil {
				fail(err)
			}
		}
		if i%7 == 6 {
			if _, _, err := s.MarkBeforeOOM(crashLive, time.Now()); err != nil {
				fail(err)
			}
		}
	}
}

// TestStore_CrashSafety kills a process storing runs with SIGKILL at
// random points, many times over, and checks the store after each kill:
// every entry the store acknowledged is indexed and whole, no indexed
// entry lacks its directory, nothing half-written is in view under runs/
// or bundles/, and Check's repair leaves a sound store.
func TestStore_CrashSafety(t *testing.T) {
	// At least minRounds, more up to maxRounds while within the budget.
	minRounds, maxRounds, budget := 30, 60, 20*time.Second
	if testing.Short() {
		minRounds, maxRounds, budget = 8, 8, 5*time.Second
	}
	rng := rand.New(rand.NewPCG(testserver.Seed(t), 2))
	start := time.Now()
	var states struct{ temporary, unindexed, repaired, acked int }
	round := 0
	var dir, data string
	for ; round < minRounds || round < maxRounds && time.Since(start) < budget; round++ {
		// A store lives for several rounds, each child going on from what
		// the last one left and the check repaired; a fresh one now and
		// then keeps the checks quick.
		if round%8 == 0 {
			if dir != "" {
				states.acked += len(readLines(t, filepath.Join(dir, ackFile)))
			}
			dir = t.TempDir()
			data = filepath.Join(dir, "data")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: the child ended by itself (%v): %s", round, err, stderr.String())
		}
		if des, _ := os.ReadDir(filepath.Join(data, TempDir)); len(des) > 0 {
			states.temporary++
		}

		// Open removes what the child left under .tmp (counted above);
		// Check finds the rest.
		s, err := Open(data)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		report, err := s.Check(false)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range report.Found {
			switch p.Kind {
			case ProblemUnindexed:
				states.unindexed++ // a complete run, renamed but not yet indexed
			default:
				t.Errorf("round %d: after SIGKILL: %s problem: %s", round, p.Kind, p)
			}
		}
		checkAcknowledged(t, s, filepath.Join(dir, ackFile))
		report, err = s.Check(true)
		if err != nil {
			t.Fatal(err)
		}
		if !report.OK() {
			t.Errorf("round %d: after repair:\n%s", round, report)
		}
		for _, p := range report.Found {
			if p.Repaired {
				states.repaired++
			}
		}
		report, err = s.Check(false)
		if err != nil {
			t.Fatal(err)
		}
		if len(report.Found) > 0 {
			t.Errorf("round %d: a second check after repair:\n%s", round, report)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			break
		}
	}
	acked := states.acked + len(readLines(t, filepath.Join(dir, ackFile)))
	t.Logf("%d rounds in %s: %d commits acknowledged; killed with captures under .tmp %d times, with a run placed but not indexed %d times; %d repairs",
		round, time.Since(start).Round(time.Millisecond), acked, states.temporary, states.unindexed, states.repaired)
	if acked == 0 {
		t.Error("no commit was acknowledged in any round: the kills came too early to test anything")
	}
}

// checkAcknowledged checks that every path in the acknowledgement file is
// indexed, in place, and whole.
func checkAcknowledged(t *testing.T, s *Embedded, ack string) {
	t.Helper()
	indexed, err := s.indexedPaths()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range readLines(t, ack) {
		if _, ok := indexed[p]; !ok {
			t.Errorf("acknowledged %s, not in the index", p)
		}
		if _, err := os.Stat(filepath.Join(s.Dir(), filepath.FromSlash(p), "result.json")); err != nil {
			t.Errorf("acknowledged %s: %v", p, err)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			out = append(out, line)
		}
	}
	return out
}
