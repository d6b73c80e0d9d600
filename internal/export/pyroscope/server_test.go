//go:build pyroscope

// The exporter against a real Grafana Pyroscope server: make
// test-pyroscope builds one from the Go module proxy into a cache
// directory (scripts/pyroscope-server.sh) and runs this test with
// PYROSCOPE_BIN naming it. The server is AGPL-licensed: it is run, never
// linked or kept in this repository.

package pyroscope

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	"google.golang.org/protobuf/proto"

	"github.com/heapscope/heapscope/internal/testserver"
)

// pyroscopeServer is a Pyroscope server of its own on 127.0.0.1.
type pyroscopeServer struct {
	url string
	cmd *exec.Cmd
	log string
}

// startPyroscope runs the server in all-in-one mode: every listener and
// every ring address on 127.0.0.1, rings in memory (no gossip), blocks on
// the filesystem under a temporary directory, no usage reports, no
// self-profiling pushes, tenants required (X-Scope-OrgID).
func startPyroscope(t *testing.T) *pyroscopeServer {
	t.Helper()
	bin := os.Getenv("PYROSCOPE_BIN")
	if bin == "" {
		t.Fatal("PYROSCOPE_BIN is not set: run make test-pyroscope, which builds the server and sets it")
	}
	dir := t.TempDir()
	httpPort, grpcPort, gossipPort := strconv.Itoa(testserver.Port(t)), strconv.Itoa(testserver.Port(t)), strconv.Itoa(testserver.Port(t))
	args := []string{
		"-target=all",
		"-server.http-listen-address=127.0.0.1", "-server.http-listen-port=" + httpPort,
		"-server.grpc-listen-address=127.0.0.1", "-server.grpc-listen-port=" + grpcPort,
		"-memberlist.bind-addr=127.0.0.1", "-memberlist.bind-port=" + gossipPort,
		"-memberlist.advertise-addr=127.0.0.1", "-memberlist.advertise-port=" + gossipPort,
		"-usage-stats.enabled=false", "-self-profiling.disable-push=true",
		"-auth.multitenancy-enabled=true",
		"-ingester.min-ready-duration=0s",
		"-storage.backend=filesystem", "-storage.filesystem.dir=" + filepath.Join(dir, "bucket"),
		"-pyroscopedb.data-path=" + filepath.Join(dir, "data"),
		"-compactor.data-dir=" + filepath.Join(dir, "compactor"),
		"-blocks-storage.bucket-store.sync-dir=" + filepath.Join(dir, "sync"),
	}
	for _, ring := range []string{"ring", "distributor.ring", "compactor.ring", "store-gateway.sharding-ring",
		"query-scheduler.ring", "overrides-exporter.ring"} {
		args = append(args, "-"+ring+".store=inmemory")
	}
	for _, addr := range []string{"ingester.lifecycler.addr", "distributor.ring.instance-addr", "compactor.ring.instance-addr",
		"store-gateway.sharding-ring.instance-addr", "query-scheduler.ring.instance-addr",
		"overrides-exporter.ring.instance-addr", "query-frontend.instance-addr"} {
		args = append(args, "-"+addr+"=127.0.0.1")
	}
	s := &pyroscopeServer{url: "http://127.0.0.1:" + httpPort, log: filepath.Join(dir, "pyroscope.log")}
	logFile, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Dir, s.cmd.Stdout, s.cmd.Stderr = dir, logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			s.cmd.Process.Kill()
			<-done
		}
		logFile.Close()
		if t.Failed() {
			s.dumpLog(t)
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := client.Get(s.url + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pyroscope not ready at %s after 90 s (last: %v)", s.url, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (s *pyroscopeServer) dumpLog(t *testing.T) {
	data, _ := os.ReadFile(s.log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	t.Logf("pyroscope log, last lines:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
}

// TestExporter_RealPyroscope pushes a real capture to a real Pyroscope and
// reads it back through the querier API: every profile type pushed is
// listed, the series carry the labels, and the merged profiles hold what
// was pushed, for the tenant pushed to and no other.
func TestExporter_RealPyroscope(t *testing.T) {
	srv := startPyroscope(t)
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}

	const tenant = "heapscope-test"
	meta := Meta{Target: "http://10.1.2.3:6060/debug/pprof/", Kind: "bundle", Trigger: "memory>=80%", ID: "bundles/it",
		Labels: map[string]string{"namespace": "shop", "pod": "cart-5f6-abc", "container": "cart", "group": "pods",
			"instance": "10.1.2.3:6060", "app.kubernetes.io/name": "cart"}}
	c, _, err := Read(realCapture(t), meta)
	if err != nil {
		t.Fatal(err)
	}
	req, _, err := Build(c)
	if err != nil {
		t.Fatal(err)
	}
	e := &Exporter{URL: srv.url, TenantID: tenant, Username: "heapscope", Password: "unused by OSS Pyroscope",
		Retries: 3, Timeout: 30 * time.Second, Client: client}
	if err := e.Push(t.Context(), req); err != nil {
		t.Fatalf("push to a real pyroscope: %v", err)
	}

	// What was pushed: each series' profile types, and the totals of each
	// over the samples with a stack (Pyroscope drops a sample without one,
	// as a goroutine profile may hold for a goroutine being created).
	want := map[string]int64{} // profile type ID → total
	for _, s := range req.Series {
		p := mustParse(t, s.Samples[0].RawProfile)
		for i, st := range p.SampleType {
			id := fmt.Sprintf("%s:%s:%s:%s:%s", seriesName(s), st.Type, st.Unit, p.PeriodType.Type, p.PeriodType.Unit)
			var sum int64
			for _, smp := range p.Sample {
				if len(smp.Location) > 0 {
					sum += smp.Value[i]
				}
			}
			want[id] = sum
		}
	}

	querier := querierv1connect.NewQuerierServiceClient(client, srv.url)
	now := time.Now()
	start, end := now.Add(-time.Hour).UnixMilli(), now.Add(time.Minute).UnixMilli()

	// The profile types, once the ingester has them.
	var types []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := querier.ProfileTypes(t.Context(), as(tenant, &querierv1.ProfileTypesRequest{Start: start, End: end}))
		if err != nil {
			t.Fatalf("ProfileTypes: %v", err)
		}
		types = types[:0]
		for _, pt := range resp.Msg.ProfileTypes {
			types = append(types, pt.ID)
		}
		missing := 0
		for id := range want {
			if !slices.Contains(types, id) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("profile types %v after 30 s, want all of %v", types, keys(want))
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Another tenant sees nothing of it.
	if resp, err := querier.ProfileTypes(t.Context(), as("someone-else", &querierv1.ProfileTypesRequest{Start: start, End: end})); err != nil || len(resp.Msg.ProfileTypes) != 0 {
		t.Errorf("another tenant's profile types: %v %v, want none", resp, err)
	}

	// The series and their labels.
	series, err := querier.Series(t.Context(), as(tenant,
		&querierv1.SeriesRequest{Matchers: []string{`{service_name="shop/cart"}`}, Start: start, End: end}))
	if err != nil {
		t.Fatalf("Series: %v", err)
	}
	names := map[string]bool{}
	for _, ls := range series.Msg.LabelsSet {
		got := map[string]string{}
		for _, l := range ls.Labels {
			got[l.Name] = l.Value
		}
		names[got["__name__"]] = true
		for k, v := range map[string]string{"namespace": "shop", "pod": "cart-5f6-abc", "container": "cart", "group": "pods",
			"instance": "10.1.2.3:6060", "app_kubernetes_io_name": "cart", "heapscope_kind": "bundle", "heapscope_trigger": "memory>=80%"} {
			if got[k] != v {
				t.Errorf("series %v: %s=%q, want %q", got, k, got[k], v)
			}
		}
		if _, ok := got["__delta__"]; ok {
			t.Errorf("series %v keeps __delta__, which Pyroscope takes as an instruction", got)
		}
	}
	t.Logf("%d series of service_name=shop/cart", len(series.Msg.LabelsSet))
	for _, n := range []string{NameCPU, NameMemory, NameGoroutine, NameMutex, NameBlock} {
		if !names[n] {
			t.Errorf("no %s series in %v", n, names)
		}
	}

	// Each profile type merged back holds what was pushed.
	for id, total := range want {
		resp, err := querier.SelectMergeProfile(t.Context(), as(tenant, &querierv1.SelectMergeProfileRequest{ProfileTypeID: id,
			LabelSelector: `{service_name="shop/cart", heapscope_kind="bundle"}`, Start: start, End: end}))
		if err != nil {
			t.Errorf("SelectMergeProfile %s: %v", id, err)
			continue
		}
		data, err := proto.Marshal(resp.Msg)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.ParseData(data)
		if err != nil {
			t.Errorf("%s: the merged profile does not decode: %v", id, err)
			continue
		}
		var sum int64
		for _, s := range p.Sample {
			sum += s.Value[0]
		}
		if sum != total {
			t.Errorf("%s: merged total %d, pushed %d", id, sum, total)
		}
		t.Logf("%s: %d samples, total %d, as pushed", id, len(p.Sample), sum)
	}
}

func keys(m map[string]int64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// as addresses a querier request to a tenant.
func as[T any](tenant string, msg *T) *connect.Request[T] {
	r := connect.NewRequest(msg)
	r.Header().Set("X-Scope-OrgID", tenant)
	return r
}
