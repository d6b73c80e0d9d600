package watch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// pusher is a Pyroscope push endpoint that records what it is sent, and
// refuses everything when refuse is set.
type pusher struct {
	refuse bool
	mu     sync.Mutex
	got    []*connect.Request[pushv1.PushRequest]
}

func (p *pusher) Push(_ context.Context, req *connect.Request[pushv1.PushRequest]) (*connect.Response[pushv1.PushResponse], error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, req)
	if p.refuse {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("profile refused"))
	}
	return connect.NewResponse(&pushv1.PushResponse{}), nil
}

func TestOnce_pushesEachCaptureToPyroscope(t *testing.T) {
	leaky := startExample(t, "leaky")
	password := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(password, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, refuse := range []bool{false, true} {
		p := &pusher{refuse: refuse}
		path, handler := pushv1connect.NewPusherServiceHandler(p)
		mux := http.NewServeMux()
		mux.Handle(path, handler)
		srv := httptest.NewServer(mux)
		defer srv.Close()

		w, st := newWatcher(t, []string{leaky.URL}, config.Settings{Window: time.Second, Timeout: 5 * time.Second})
		w.opts.Config.Pyroscope = &config.Pyroscope{URL: srv.URL, TenantID: "team-a", Timeout: 5 * time.Second,
			BasicAuth: &config.BasicAuth{Username: "heapscope", PasswordFile: password}}
		if err := w.Once(t.Context()); err != nil {
			t.Fatalf("Once (Pyroscope refusing: %v): %v: a push must not fail the capture", refuse, err)
		}
		h, err := st.History(store.Query{})
		if err != nil || len(h.Runs) != 1 {
			t.Fatalf("history: %v, %v; want the one run stored", h, err)
		}
		if len(p.got) != 1 {
			t.Fatalf("%d pushes, want the capture's one (refused once is final)", len(p.got))
		}
		metrics := httptest.NewRecorder()
		w.Handler().ServeHTTP(metrics, httptest.NewRequest("GET", "/metrics", nil))
		want := `heapscope_watch_pyroscope_pushes_total{outcome="ok"} 1`
		if refuse {
			want = `heapscope_watch_pyroscope_pushes_total{outcome="failed"} 1`
		}
		if body := metrics.Body.String(); !strings.Contains(body, want+"\n") || strings.Count(body, "heapscope_watch_pyroscope_pushes_total{") != 1 {
			t.Errorf("/metrics does not say %s alone:\n%s", want, grepLines(body, "pyroscope"))
		}
		if refuse {
			continue
		}
		req := p.got[0]
		if user, pass, _ := (&http.Request{Header: req.Header()}).BasicAuth(); user != "heapscope" || pass != "s3cret" {
			t.Errorf("basic auth %q:%q, want heapscope and the file's password", user, pass)
		}
		if req.Header().Get("X-Scope-OrgID") != "team-a" {
			t.Errorf("tenant %q", req.Header().Get("X-Scope-OrgID"))
		}
		host := strings.TrimPrefix(leaky.URL, "http://")
		var names []string
		for _, s := range req.Msg.Series {
			labels := map[string]string{}
			for _, l := range s.Labels {
				labels[l.Name] = l.Value
			}
			names = append(names, labels["__name__"])
			if labels["service_name"] != host || labels["instance"] != host || labels["group"] != "cli" || labels["heapscope_kind"] != "run" {
				t.Errorf("series %s: labels %v", labels["__name__"], labels)
			}
			if len(s.Samples) != 1 || len(s.Samples[0].RawProfile) == 0 || s.Samples[0].ID == "" {
				t.Errorf("series %s: samples %v", labels["__name__"], s.Samples)
			}
		}
		if want := []string{"process_cpu", "memory", "goroutine"}; !slices.Equal(names, want) {
			t.Errorf("series %v, want %v (the default profiles)", names, want)
		}
	}
}

func grepLines(text, word string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, word) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
