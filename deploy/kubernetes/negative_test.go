package kubernetes_test

import (
	"maps"
	"strings"
	"testing"
)

// minimalDeployment is a Deployment as small as the decoder takes; the
// cases below spoil it one way each.
const minimalDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
spec:
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
        - name: x
          image: heapscope:latest
          securityContext:
            runAsNonRoot: true
`

func TestDecodeFile_Rejects(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // in the error; "" for none
	}{
		{"minimal", minimalDeployment, ""},
		{"typo in a field", strings.Replace(minimalDeployment, "securityContext:", "securityContxt:", 1), `unknown field "securityContxt"`},
		{"typo at the top", "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\nspce: {}\n", `unknown field "spce"`},
		{"field given twice", "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\nmetadata: {name: y}\n", `"metadata" already set`},
		{"field of the wrong type", strings.Replace(minimalDeployment, "runAsNonRoot: true", "runAsNonRoot: yes please", 1), "decode Deployment"},
		{"unknown kind", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\n", `unknown kind "StatefulSet"`},
		{"known kind, other apiVersion", "apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: x}\n", `unknown kind "CronJob" of apiVersion "batch/v1beta1"`},
		{"no kind", "metadata: {name: x}\n", `unknown kind ""`},
		{"only comments", "# nothing\n---\n", "no documents"},
		{"second document bad", "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\napiVersion: v1\nkind: Namespace\nmetdata: {}\n", `x.yaml[1]: decode Namespace`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeFile("x.yaml", []byte(tt.yaml))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("decodeFile: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("decodeFile took it, want an error with %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("decodeFile: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestReadKustomization_Rejects(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"typo", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresource: [a.yaml]\n", `unknown field "resource"`},
		{"other kind", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n", "want kustomize.config.k8s.io/v1beta1 Kustomization"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readKustomization([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("readKustomization: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestCheck_Rejects spoils the real manifests one way each, in memory, and
// expects the checks to say so.
func TestCheck_Rejects(t *testing.T) {
	// The container's own securityContext in deployment.yaml.
	const containerSC = "            runAsNonRoot: true\n            runAsUser: 65532\n            runAsGroup: 65532\n            readOnlyRootFilesystem"
	tests := []struct {
		name     string
		file     string
		old, new string
		want     []string
	}{
		{"container runs as root", "deployment.yaml", containerSC,
			"            runAsNonRoot: false\n            runAsUser: 0\n            runAsGroup: 0\n            readOnlyRootFilesystem",
			[]string{"container heapscope: runAsNonRoot is not true", "container heapscope: runAsUser is 0, want 65532", "runAsGroup is 0"}},
		{"container without securityContext", "cronjob.yaml", "              securityContext:\n", "              securityContextDropped:\n",
			[]string{`unknown field`}},
		{"writable root filesystem", "deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false",
			[]string{"readOnlyRootFilesystem is not true"}},
		{"privilege escalation", "daemonset.yaml", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true",
			[]string{"allowPrivilegeEscalation is not false"}},
		{"capabilities kept", "cronjob.yaml", "drop: [ALL]", "drop: [NET_RAW]",
			[]string{"capabilities do not drop ALL"}},
		{"capability added", "deployment.yaml", "drop: [ALL]", "drop: [ALL]\n              add: [SYS_PTRACE]",
			[]string{"adds capabilities [SYS_PTRACE]"}},
		{"pod seccomp unconfined", "daemonset.yaml", "        seccompProfile:\n          type: RuntimeDefault", "        seccompProfile:\n          type: Unconfined",
			[]string{"pod seccompProfile is not RuntimeDefault"}},
		{"host PID", "daemonset.yaml", "      enableServiceLinks: false", "      enableServiceLinks: false\n      hostPID: true",
			[]string{"shares the node's network, PID or IPC namespace"}},
		{"no memory limit", "deployment.yaml", "              cpu: \"1\"\n              memory: 512Mi\n", "              cpu: \"1\"\n",
			[]string{"no memory limit"}},
		{"no cpu request", "daemonset.yaml", "              cpu: 50m\n", "",
			[]string{"no cpu request"}},
		{"GOMEMLIMIT above the limit", "deployment.yaml", "value: 410MiB", "value: 600MiB",
			[]string{"GOMEMLIMIT 600MiB (629145600 bytes) is not between 50% and 90% of the memory limit 512Mi"}},
		{"GOMEMLIMIT unparsable", "cronjob.yaml", "value: 410MiB", "value: 410Mi",
			[]string{`GOMEMLIMIT: bad value "410Mi"`}},
		{"no GOMEMLIMIT", "daemonset.yaml", "            - name: GOMEMLIMIT\n              value: 410MiB\n", "",
			[]string{"container heapscope: no GOMEMLIMIT"}},
		{"writable hostPath", "daemonset.yaml", "              readOnly: true\n              recursiveReadOnly", "              readOnly: false\n              recursiveReadOnly",
			[]string{"mounts hostPath /sys/fs/cgroup at /host/sys/fs/cgroup writable", "the node's /sys/fs/cgroup is not mounted read only"}},
		{"no /tmp", "deployment.yaml", "              mountPath: /tmp", "              mountPath: /scratch",
			[]string{"no writable emptyDir at /tmp"}},
		{"args do not start with watch", "deployment.yaml", "            - watch\n", "            - history\n            - watch\n",
			[]string{"do not start with watch"}},
		{"entrypoint overridden", "cronjob.yaml", "              args:\n", "              command: [/bin/sh, -c]\n              args:\n",
			[]string{"overrides the image's entrypoint"}},
		{"listening on loopback", "daemonset.yaml", "0.0.0.0:7071", "127.0.0.1:7071",
			[]string{`--listen "127.0.0.1:7071", want 0.0.0.0:7071`}},
		{"serving without credentials", "deployment.yaml", "            - --auth-tokens\n            - /etc/heapscope-auth/tokens\n", "",
			[]string{"container heapscope serves beyond loopback without --auth-tokens or --htpasswd"}},
		{"credentials not from a Secret", "daemonset.yaml", "            secretName: heapscope-auth", "            secretName: heapscope-other",
			[]string{"container heapscope: no Secret heapscope-other in the manifests"}},
		{"probe elsewhere", "deployment.yaml", "          livenessProbe:\n            httpGet:\n              path: /healthz", "          livenessProbe:\n            httpGet:\n              path: /metrics",
			[]string{`liveness probe path "/metrics"`}},
		{"no NODE_NAME", "daemonset.yaml", "fieldPath: spec.nodeName", "fieldPath: metadata.name",
			[]string{"no NODE_NAME from spec.nodeName"}},
		{"CronJob runs in parallel", "cronjob.yaml", "concurrencyPolicy: Forbid", "concurrencyPolicy: Allow",
			[]string{`concurrencyPolicy "Allow", want Forbid`}},
		{"CronJob without --once", "cronjob.yaml", "                - --once\n", "",
			[]string{"a CronJob's watch runs without --once"}},
		{"Deployment rolls", "deployment.yaml", "    type: Recreate", "    type: RollingUpdate",
			[]string{`strategy "RollingUpdate", want Recreate`}},
		{"claim shared", "cronjob.yaml", "claimName: heapscope-cronjob-data", "claimName: heapscope-data",
			[]string{"both mount claim heapscope-data", "claim heapscope-cronjob-data is mounted by no workload"}},
		{"claim missing", "deployment.yaml", "claimName: heapscope-data", "claimName: heapscope-store",
			[]string{"no claim heapscope-store in the manifests"}},
		{"ConfigMap key missing", "daemonset.yaml", "- key: node.yaml", "- key: nodes.yaml",
			[]string{"ConfigMap heapscope-config has no key nodes.yaml"}},
		{"RBAC verb that writes", "rbac.yaml", "verbs: [get, list, watch]", "verbs: [get, list, watch, delete]",
			[]string{"verbs [get list watch delete], want a subset of [get list watch]"}},
		{"RBAC reads secrets", "rbac.yaml", "resources: [pods]", "resources: [pods, secrets]",
			[]string{"resources [pods secrets], want pods only"}},
		{"RBAC other API group", "rbac.yaml", `apiGroups: [""]`, `apiGroups: ["", apps]`,
			[]string{`apiGroups ["" "apps"]`}},
		{"binding to another account", "rbac.yaml", "  - kind: ServiceAccount\n    name: heapscope", "  - kind: ServiceAccount\n    name: default",
			[]string{"is not a ServiceAccount of the manifests", `serviceAccountName "heapscope" is not the bound ServiceAccount`}},
		{"token where none is needed", "deployment.yaml", "automountServiceAccountToken: false", "automountServiceAccountToken: true",
			[]string{"automountServiceAccountToken true, want false"}},
		{"namespace elsewhere", "pvc.yaml", "  name: heapscope-data\n  namespace: heapscope", "  name: heapscope-data\n  namespace: default",
			[]string{`namespace "default", want "heapscope"`}},
		{"Service selects the DaemonSet", "service.yaml", "    app.kubernetes.io/component: remote\n  ports:", "    app.kubernetes.io/component: node\n  ports:",
			[]string{"selects no Deployment's pods", "selects DaemonSet heapscope-node's pods too"}},
		{"Service targets no port", "service.yaml", "targetPort: http", "targetPort: 8080",
			[]string{"targetPort 8080 is not a port of Deployment heapscope's container heapscope"}},
		{"watch config typo", "configmap.yaml", "refresh_interval: 1m", "refresh_intervall: 1m",
			[]string{"refresh_intervall: unknown key"}},
		{"watch config bad trigger", "configmap.yaml", "      - name: static\n", "      - name: static\n        triggers: ['memory>>80%']\n",
			[]string{"groups[0].triggers[0]"}},
		{"node config not node-local", "configmap.yaml", "          node: $NODE_NAME        # the DaemonSet mode: only this node's pods", "          node: \"\"",
			[]string{"node.yaml: target http://10.1.0.8:6060/debug/pprof/ is a pod of node node-b, not of the watcher's own node node-a"}},
		{"node config with a static target", "configmap.yaml", "        triggers:\n          - 'memory>=80%'\n  heapscope.yaml",
			"        static: [{targets: ['db.default.svc:6060']}]\n        triggers:\n          - 'memory>=80%'\n  heapscope.yaml",
			[]string{"node.yaml: groups[0] is not a kubernetes group of node $NODE_NAME"}},
		{"node config reads no cgroups", "configmap.yaml", "cgroup_root: /host/sys/fs/cgroup   #", "cgroup_root: /sys/fs/cgroup   #",
			[]string{`node.yaml: groups[0]: cgroup_root "/sys/fs/cgroup" is not where the DaemonSet mounts the node's cgroups`}},
	}
	k, files := loadDir(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spoilt := maps.Clone(files)
			data := string(spoilt[tt.file])
			if n := strings.Count(data, tt.old); n != 1 {
				t.Fatalf("%s holds %q %d times, want once", tt.file, tt.old, n)
			}
			spoilt[tt.file] = []byte(strings.Replace(data, tt.old, tt.new, 1))
			objs, err := decodeAll(spoilt, k.Resources)
			var errs []error
			if err != nil {
				errs = []error{err}
			} else {
				errs = check(objs)
			}
			for _, want := range tt.want {
				if !errorsContain(errs, want) {
					t.Errorf("no error says %q; got:", want)
					for _, err := range errs {
						t.Log(err)
					}
				}
			}
		})
	}
}

func TestParseGoMemLimit(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0: an error
	}{
		{"410MiB", 410 << 20},
		{"1GiB", 1 << 30},
		{"1048576", 1 << 20},
		{"512B", 512},
		{"4KiB", 4 << 10},
		{"410Mi", 0},
		{"410MB", 0},
		{"-1", 0},
		{"", 0},
		{"off", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseGoMemLimit(tt.in)
			if tt.want == 0 {
				if err == nil {
					t.Fatalf("parseGoMemLimit(%q) = %d, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseGoMemLimit(%q) = %d, %v, want %d", tt.in, got, err, tt.want)
			}
		})
	}
}
