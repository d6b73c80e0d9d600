package kubernetes_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of kustomization.yaml these manifests use;
// anything else in the file is an error.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
}

// object is one decoded document of a manifest file: Obj is a pointer to
// its k8s.io/api type.
type object struct {
	File  string
	Index int // the document's place in its file, from 0
	Kind  string
	Obj   any
}

func (o object) String() string {
	return fmt.Sprintf("%s[%d] %s", o.File, o.Index, o.Kind)
}

// kinds gives the type of each apiVersion and kind the manifests may hold.
var kinds = map[string]func() any{
	"batch/v1/CronJob":         func() any { return new(batchv1.CronJob) },
	"apps/v1/DaemonSet":        func() any { return new(appsv1.DaemonSet) },
	"apps/v1/Deployment":       func() any { return new(appsv1.Deployment) },
	"v1/ConfigMap":             func() any { return new(corev1.ConfigMap) },
	"v1/Service":               func() any { return new(corev1.Service) },
	"v1/Secret":                func() any { return new(corev1.Secret) },
	"v1/ServiceAccount":        func() any { return new(corev1.ServiceAccount) },
	"v1/Namespace":             func() any { return new(corev1.Namespace) },
	"v1/PersistentVolumeClaim": func() any { return new(corev1.PersistentVolumeClaim) },
	"rbac.authorization.k8s.io/v1/ClusterRole":        func() any { return new(rbacv1.ClusterRole) },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": func() any { return new(rbacv1.ClusterRoleBinding) },
}

// splitDocuments splits a YAML stream on its "---" lines, leaving out
// documents that hold only comments and blank lines.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	content := false
	flush := func() {
		if content {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
		content = false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimRight(line, " \t") == "---" || strings.HasPrefix(line, "--- ") {
			flush()
			continue
		}
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			content = true
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	flush()
	return docs
}

// decodeFile decodes every document of a manifest file strictly into its
// k8s.io/api type: an unknown or duplicated field, or a kind not in
// kinds, is an error.
func decodeFile(file string, data []byte) ([]object, error) {
	var out []object
	for i, doc := range splitDocuments(data) {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("%s[%d]: read kind: %w", file, i, err)
		}
		newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
		if !ok {
			return nil, fmt.Errorf("%s[%d]: unknown kind %q of apiVersion %q", file, i, tm.Kind, tm.APIVersion)
		}
		obj := newObj()
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("%s[%d]: decode %s: %w", file, i, tm.Kind, err)
		}
		out = append(out, object{File: file, Index: i, Kind: tm.Kind, Obj: obj})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no documents", file)
	}
	return out, nil
}

// decodeAll decodes the files named, in order.
func decodeAll(files map[string][]byte, names []string) ([]object, error) {
	var all []object
	for _, name := range names {
		data, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("%s: no such file", name)
		}
		objs, err := decodeFile(name, data)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	return all, nil
}

// readKustomization reads kustomization.yaml strictly.
func readKustomization(data []byte) (kustomization, error) {
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return k, fmt.Errorf("decode kustomization.yaml: %w", err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return k, fmt.Errorf("kustomization.yaml: apiVersion %q kind %q, want kustomize.config.k8s.io/v1beta1 Kustomization", k.APIVersion, k.Kind)
	}
	return k, nil
}

// loadDir reads kustomization.yaml and every .yaml file of the directory.
func loadDir(t *testing.T) (kustomization, map[string][]byte) {
	t.Helper()
	names, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	data, ok := files["kustomization.yaml"]
	if !ok {
		t.Fatal("no kustomization.yaml")
	}
	k, err := readKustomization(data)
	if err != nil {
		t.Fatal(err)
	}
	return k, files
}

// loadObjects decodes every resource kustomization.yaml lists.
func loadObjects(t *testing.T) []object {
	t.Helper()
	k, files := loadDir(t)
	objs, err := decodeAll(files, k.Resources)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestKustomization_ListsEveryManifest(t *testing.T) {
	k, files := loadDir(t)
	if k.Namespace != namespace {
		t.Errorf("kustomization.yaml: namespace %q, want %q", k.Namespace, namespace)
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(r); err != nil {
			t.Errorf("kustomization.yaml lists %s: %v", r, err)
		}
	}
	for name := range files {
		if name != "kustomization.yaml" && !slices.Contains(k.Resources, name) {
			t.Errorf("%s is not listed in kustomization.yaml's resources", name)
		}
	}
	seen := map[string]bool{}
	for _, r := range k.Resources {
		if seen[r] {
			t.Errorf("kustomization.yaml lists %s twice", r)
		}
		seen[r] = true
	}
}

func TestManifests_DecodeStrictly(t *testing.T) {
	k, files := loadDir(t)
	for _, name := range k.Resources {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeFile(name, files[name]); err != nil {
				t.Error(err)
			}
		})
	}
	// Every kind the checks expect is there.
	objs := loadObjects(t)
	for key := range kinds {
		kind := key[strings.LastIndex(key, "/")+1:]
		if !slices.ContainsFunc(objs, func(o object) bool { return o.Kind == kind }) {
			t.Errorf("no %s in the manifests", kind)
		}
	}
}

func TestManifests_Check(t *testing.T) {
	objs := loadObjects(t)
	for _, err := range check(objs) {
		t.Error(err)
	}
}

func TestSplitDocuments(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"one", "kind: A\n", 1},
		{"two", "kind: A\n---\nkind: B\n", 2},
		{"leading separator and comments", "# c\n---\nkind: A\n--- # end\n# only a comment\n", 1},
		{"separator with trailing space", "kind: A\n--- \nkind: B\n", 2},
		{"empty", "\n# nothing\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(splitDocuments([]byte(tt.in))); got != tt.want {
				t.Errorf("splitDocuments(%q): %d documents, want %d", tt.in, got, tt.want)
			}
		})
	}
}

// errorsContain reports whether one of errs says want.
func errorsContain(errs []error, want string) bool {
	return slices.ContainsFunc(errs, func(err error) bool { return strings.Contains(err.Error(), want) })
}
