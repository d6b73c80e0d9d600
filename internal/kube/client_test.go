package kube

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiServer is the part of a Kubernetes API server that discovery uses:
// GET /api/v1/pods as a list, and as a watch that streams the events the
// test sends. A streaming list (sendInitialEvents) is refused, as API
// servers without the feature refuse it, so the client lists, then
// watches. Requests must carry the kubeconfig's bearer token.
type apiServer struct {
	*httptest.Server
	events chan string // watch events, one JSON object each

	mu       sync.Mutex
	pods     []corev1.Pod
	requests []string // the query of each list and watch
}

func newAPIServer(t *testing.T, pods ...corev1.Pod) *apiServer {
	t.Helper()
	a := &apiServer{events: make(chan string, 10), pods: pods}
	a.Server = httptest.NewTLSServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.Close)
	return a
}

func (a *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer test-token" {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`, http.StatusUnauthorized)
		return
	}
	if r.URL.Path != "/api/v1/pods" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	a.mu.Lock()
	a.requests = append(a.requests, r.URL.RawQuery)
	pods := a.pods
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case q.Get("sendInitialEvents") == "true":
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400,"message":"sendInitialEvents is not supported"}`)
	case q.Get("watch") == "true":
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case ev := <-a.events:
				fmt.Fprintln(w, ev)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	default:
		list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
			ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: pods}
		json.NewEncoder(w).Encode(list)
	}
}

// send streams a watch event of pod.
func (a *apiServer) send(t *testing.T, typ string, pod *corev1.Pod) {
	t.Helper()
	pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	obj, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	a.events <- fmt.Sprintf(`{"type":%q,"object":%s}`, typ, obj)
}

// kubeconfig writes a kubeconfig file for the server: its address, its
// certificate, a token (client-go sends credentials over TLS only).
func (a *apiServer) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Certificate().Raw})
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, certificate-authority-data: %q}
users:
- name: test
  user: {token: test-token}
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
`, a.URL, base64.StdEncoding.EncodeToString(ca))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNewClient_ListsThenWatches(t *testing.T) {
	first := testPod("shop", "api")
	first.ResourceVersion = "9"
	a := newAPIServer(t, *first)
	client, err := NewClient(a.kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	d := startRun(t, Options{Client: client, Selector: "app", Node: "node-a"})
	d.expect(t, "shop/api")

	second := testPod("shop", "api-2")
	second.ResourceVersion = "11"
	a.send(t, "ADDED", second)
	d.expect(t, "shop/api", "shop/api-2")
	first.ResourceVersion = "12"
	a.send(t, "DELETED", first)
	d.expect(t, "shop/api-2")

	a.mu.Lock()
	defer a.mu.Unlock()
	var lists, watches int
	for _, q := range a.requests {
		if !strings.Contains(q, "labelSelector=app&") || !strings.Contains(q, "fieldSelector=spec.nodeName%3Dnode-a") {
			t.Errorf("request %q does not carry the selectors", q)
		}
		switch {
		case strings.Contains(q, "sendInitialEvents"):
		case strings.Contains(q, "watch=true"):
			watches++
		default:
			lists++
		}
	}
	if lists != 1 || watches < 1 {
		t.Errorf("%d lists and %d watches (%q): want one list, then watches", lists, watches, a.requests)
	}
}

func TestNewClient_Errors(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("clusters: [{"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, kubeconfig, want string
	}{
		{"no cluster, no kubeconfig", "", "not in a cluster"},
		{"missing kubeconfig", filepath.Join(t.TempDir(), "missing"), "kubeconfig"},
		{"malformed kubeconfig", bad, "kubeconfig " + bad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClient(tt.kubeconfig)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewClient(%q) = %v, want an error with %q", tt.kubeconfig, err, tt.want)
			}
		})
	}
}
