package kubetest

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Token is the bearer token APIServer requires and its kubeconfig holds.
const Token = "kubetest-token"

// APIServer is the part of a Kubernetes API server that pod discovery
// uses, over TLS on 127.0.0.1: GET /api/v1/pods and
// /api/v1/namespaces/NS/pods as a list, and as a watch that streams the
// events the test sends (of the namespace asked for). A streaming list
// (sendInitialEvents) is refused, as API servers without the feature
// refuse it, so clients list, then watch. Requests must carry Token.
type APIServer struct {
	*httptest.Server
	events chan string // watch events, one JSON object each

	mu       sync.Mutex
	pods     []corev1.Pod
	requests []string // the query of each list and watch
}

// NewAPIServer starts an APIServer listing pods, stopped at the test's end.
func NewAPIServer(t testing.TB, pods ...*corev1.Pod) *APIServer {
	t.Helper()
	a := &APIServer{events: make(chan string, 16)}
	for _, p := range pods {
		a.pods = append(a.pods, *p)
	}
	a.Server = httptest.NewTLSServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.Close)
	return a
}

func (a *APIServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+Token {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`)
		return
	}
	ns, ok := namespaceOf(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	a.mu.Lock()
	a.requests = append(a.requests, r.URL.RawQuery)
	var pods []corev1.Pod
	for _, p := range a.pods {
		if ns == "" || p.Namespace == ns {
			pods = append(pods, p)
		}
	}
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

// namespaceOf reads the namespace of a pods path: "" for all.
func namespaceOf(path string) (string, bool) {
	if path == "/api/v1/pods" {
		return "", true
	}
	rest, ok := strings.CutPrefix(path, "/api/v1/namespaces/")
	ns, ok2 := strings.CutSuffix(rest, "/pods")
	return ns, ok && ok2 && ns != "" && !strings.Contains(ns, "/")
}

// Send streams a watch event (ADDED, MODIFIED, DELETED) of pod to the
// watch open now, or the next one.
func (a *APIServer) Send(t testing.TB, typ string, pod *corev1.Pod) {
	t.Helper()
	p := *pod
	p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	obj, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	a.events <- fmt.Sprintf(`{"type":%q,"object":%s}`, typ, obj)
}

// Requests returns the query of each list and watch so far.
func (a *APIServer) Requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests)
}

// Kubeconfig writes a kubeconfig file for the server into a temporary
// directory of the test: its address, its certificate and Token
// (client-go sends credentials over TLS only).
func (a *APIServer) Kubeconfig(t testing.TB) string {
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
  user: {token: %q}
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
`, a.URL, base64.StdEncoding.EncodeToString(ca), Token)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
