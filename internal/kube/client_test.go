package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/kube/kubetest"
)

func TestNewClient_ListsThenWatches(t *testing.T) {
	first := testPod("shop", "api")
	first.ResourceVersion = "9"
	a := kubetest.NewAPIServer(t, first)
	client, err := NewClient(a.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	d := startRun(t, Options{Client: client, Selector: "app", Node: "node-a"})
	d.expect(t, "shop/api")

	second := testPod("shop", "api-2")
	second.ResourceVersion = "11"
	a.Send(t, "ADDED", second)
	d.expect(t, "shop/api", "shop/api-2")
	first.ResourceVersion = "12"
	a.Send(t, "DELETED", first)
	d.expect(t, "shop/api-2")

	requests := a.Requests()
	var lists, watches int
	for _, q := range requests {
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
		t.Errorf("%d lists and %d watches (%q): want one list, then watches", lists, watches, requests)
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
