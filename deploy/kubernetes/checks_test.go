package kubernetes_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/heapscope/heapscope/internal/kube"
	"github.com/heapscope/heapscope/internal/kube/kubetest"
	"github.com/heapscope/heapscope/internal/trigger"
	"github.com/heapscope/heapscope/internal/watch/config"
	"github.com/heapscope/heapscope/internal/watch/kubesd"
)

const (
	namespace = "heapscope"
	// uid and gid of the image's user, distroless' "nonroot".
	nonroot  = 65532
	port     = 7071
	dataPath = "/var/lib/heapscope"
)

// podTemplate is a pod template of a workload, named for errors.
type podTemplate struct {
	Name string // such as "daemonset.yaml[0] DaemonSet heapscope-node"
	Kind string
	Spec corev1.PodSpec
	// Labels are the template's pod labels.
	Labels map[string]string
	// Serves: the pod runs until stopped and serves /healthz.
	Serves bool
}

// check holds the decoded manifests to their properties and returns
// every way they fall short.
func check(objs []object) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	var (
		pods     []podTemplate
		claims   = map[string]*corev1.PersistentVolumeClaim{}
		cms      = map[string]*corev1.ConfigMap{}
		secrets  = map[string]*corev1.Secret{}
		sas      = map[string]bool{}
		roles    = map[string]*rbacv1.ClusterRole{}
		bindings []*rbacv1.ClusterRoleBinding
		services []*corev1.Service
		deploys  []*appsv1.Deployment
		daemons  []*appsv1.DaemonSet
		crons    []*batchv1.CronJob
	)
	for _, o := range objs {
		switch v := o.Obj.(type) {
		case *batchv1.CronJob:
			crons = append(crons, v)
			pods = append(pods, podTemplate{fmt.Sprintf("%s %s", o, v.Name), o.Kind, v.Spec.JobTemplate.Spec.Template.Spec, v.Spec.JobTemplate.Spec.Template.Labels, false})
		case *appsv1.DaemonSet:
			daemons = append(daemons, v)
			pods = append(pods, podTemplate{fmt.Sprintf("%s %s", o, v.Name), o.Kind, v.Spec.Template.Spec, v.Spec.Template.Labels, true})
		case *appsv1.Deployment:
			deploys = append(deploys, v)
			pods = append(pods, podTemplate{fmt.Sprintf("%s %s", o, v.Name), o.Kind, v.Spec.Template.Spec, v.Spec.Template.Labels, true})
		case *corev1.PersistentVolumeClaim:
			claims[v.Name] = v
		case *corev1.ConfigMap:
			cms[v.Name] = v
		case *corev1.Secret:
			secrets[v.Name] = v
		case *corev1.ServiceAccount:
			sas[v.Name] = true
		case *rbacv1.ClusterRole:
			roles[v.Name] = v
		case *rbacv1.ClusterRoleBinding:
			bindings = append(bindings, v)
		case *corev1.Service:
			services = append(services, v)
		}
		if ns := namespaceOf(o.Obj); ns != "" && ns != namespace {
			add("%s: namespace %q, want %q", o, ns, namespace)
		}
	}

	for _, p := range pods {
		errs = append(errs, checkPod(p)...)
		errs = append(errs, checkVolumeRefs(p, claims, cms)...)
		if p.Serves {
			errs = append(errs, checkAuth(p, secrets)...)
		}
	}
	errs = append(errs, checkWorkloads(crons, deploys, daemons, claims)...)
	errs = append(errs, checkRBAC(pods, sas, roles, bindings)...)
	errs = append(errs, checkServices(services, deploys, daemons)...)
	errs = append(errs, checkConfigMaps(cms)...)
	return errs
}

// namespaceOf returns the namespace an object names; "" for a
// cluster-scoped one.
func namespaceOf(obj any) string {
	if o, ok := obj.(metav1.Object); ok {
		return o.GetNamespace()
	}
	return ""
}

// checkPod checks a pod template's and its containers' security context,
// resources, memory limit, mounts, command and probes.
func checkPod(p podTemplate) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(p.Name+": "+format, args...)) }
	s := p.Spec

	if s.HostNetwork || s.HostPID || s.HostIPC {
		add("shares the node's network, PID or IPC namespace")
	}
	if psc := s.SecurityContext; psc == nil {
		add("no pod securityContext")
	} else {
		if !isTrue(psc.RunAsNonRoot) {
			add("pod runAsNonRoot is not true")
		}
		if !is(psc.RunAsUser, nonroot) || !is(psc.RunAsGroup, nonroot) {
			add("pod runAsUser/runAsGroup are not %d", nonroot)
		}
		if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			add("pod seccompProfile is not RuntimeDefault")
		}
	}
	if len(s.Containers) == 0 {
		add("no containers")
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range s.Volumes {
		volumes[v.Name] = v
	}
	mounted := map[string]bool{}
	for _, c := range slices.Concat(s.InitContainers, s.Containers) {
		cname := "container " + c.Name
		errs = append(errs, checkContainerSecurity(p.Name+": "+cname, c)...)
		errs = append(errs, checkResources(p.Name+": "+cname, c)...)

		var tmp, data bool
		for _, m := range c.VolumeMounts {
			mounted[m.Name] = true
			v, ok := volumes[m.Name]
			if !ok {
				add("%s mounts %s, which is not a volume of the pod", cname, m.Name)
				continue
			}
			switch {
			case v.HostPath != nil && !m.ReadOnly:
				// No data volume here is a hostPath (see daemonset.yaml):
				// every host mount is read only.
				add("%s mounts hostPath %s at %s writable", cname, v.HostPath.Path, m.MountPath)
			case v.HostPath != nil && m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone:
				add("%s mounts hostPath %s with propagation %s", cname, v.HostPath.Path, *m.MountPropagation)
			}
			if m.MountPath == "/tmp" {
				tmp = v.EmptyDir != nil && !m.ReadOnly
			}
			if m.MountPath == dataPath {
				data = (v.EmptyDir != nil || v.PersistentVolumeClaim != nil) && !m.ReadOnly
			}
		}
		if !tmp {
			add("%s has no writable emptyDir at /tmp (its root filesystem is read only)", cname)
		}
		if !data {
			add("%s has no writable emptyDir or claim at %s", cname, dataPath)
		}

		if len(c.Command) != 0 {
			add("%s overrides the image's entrypoint", cname)
		}
		if len(c.Args) == 0 || c.Args[0] != "watch" {
			add("%s: args %q do not start with watch", cname, c.Args)
		}
		if got := flagValue(c.Args, "--data"); got != dataPath {
			add("%s: --data %q, want %s", cname, got, dataPath)
		}
		if p.Serves {
			errs = append(errs, checkServing(p.Name+": "+cname, c)...)
		} else if !slices.Contains(c.Args, "--once") {
			add("%s: a %s's watch runs without --once", cname, p.Kind)
		}
	}
	for name := range volumes {
		if !mounted[name] {
			add("volume %s is mounted by no container", name)
		}
	}
	return errs
}

// checkContainerSecurity checks a container's own securityContext: it
// repeats the pod's, so that it holds whatever pod it is copied into.
func checkContainerSecurity(name string, c corev1.Container) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(name+": "+format, args...)) }
	sc := c.SecurityContext
	if sc == nil {
		return append(errs, fmt.Errorf("%s: no securityContext", name))
	}
	if !isTrue(sc.RunAsNonRoot) {
		add("runAsNonRoot is not true")
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != nonroot {
		add("runAsUser is %s, want %d", ptrString(sc.RunAsUser), nonroot)
	}
	if sc.RunAsGroup == nil || *sc.RunAsGroup != nonroot {
		add("runAsGroup is %s, want %d", ptrString(sc.RunAsGroup), nonroot)
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		add("readOnlyRootFilesystem is not true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		add("allowPrivilegeEscalation is not false")
	}
	if isTrue(sc.Privileged) {
		add("privileged")
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		add("capabilities do not drop ALL")
	} else if len(sc.Capabilities.Add) > 0 {
		add("adds capabilities %v", sc.Capabilities.Add)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		add("seccompProfile is not RuntimeDefault")
	}
	return errs
}

// checkResources checks requests and limits of CPU and memory, and that
// GOMEMLIMIT leaves the runtime room below the memory limit.
func checkResources(name string, c corev1.Container) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(name+": "+format, args...)) }
	r := c.Resources
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := r.Requests[res]
		lim, hasLim := r.Limits[res]
		if !hasReq || req.IsZero() {
			add("no %s request", res)
		}
		if !hasLim || lim.IsZero() {
			add("no %s limit", res)
		}
		if hasReq && hasLim && req.Cmp(lim) > 0 {
			add("%s request %s above its limit %s", res, req.String(), lim.String())
		}
	}
	limit, ok := r.Limits[corev1.ResourceMemory]
	if !ok {
		return errs
	}
	var env *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "GOMEMLIMIT" {
			env = &c.Env[i]
		}
	}
	if env == nil {
		// watch would set 256 MiB itself, whatever the container's limit.
		return append(errs, fmt.Errorf("%s: no GOMEMLIMIT", name))
	}
	soft, err := parseGoMemLimit(env.Value)
	if err != nil {
		return append(errs, fmt.Errorf("%s: GOMEMLIMIT: %w", name, err))
	}
	// The runtime's soft limit must stay below the kernel's hard one, with
	// room for what it does not count (stacks of threads, the binary).
	if hard := limit.Value(); soft >= hard*9/10 || soft < hard/2 {
		add("GOMEMLIMIT %s (%d bytes) is not between 50%% and 90%% of the memory limit %s", env.Value, soft, limit.String())
	}
	return errs
}

// parseGoMemLimit parses GOMEMLIMIT as the runtime does: a number of
// bytes with an optional B, KiB, MiB, GiB or TiB.
func parseGoMemLimit(s string) (int64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	num, shift := s, uint(0)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = n, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("bad value %q (want e.g. 410MiB)", s)
	}
	return n << shift, nil
}

// checkServing checks a long-running watcher's listener and its probes.
func checkServing(name string, c corev1.Container) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(name+": "+format, args...)) }
	if got := flagValue(c.Args, "--listen"); got != "0.0.0.0:"+strconv.Itoa(port) {
		add("--listen %q, want 0.0.0.0:%d (probes come from the kubelet, not loopback)", got, port)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == port }) {
		add("no container port %d", port)
	}
	for kind, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			add("no %s probe over HTTP", kind)
			continue
		}
		if probe.HTTPGet.Path != "/healthz" {
			add("%s probe path %q, want /healthz", kind, probe.HTTPGet.Path)
		}
		if got, ok := containerPort(c, probe.HTTPGet.Port.String()); !ok || got != port {
			add("%s probe port %s is not container port %d", kind, probe.HTTPGet.Port.String(), port)
		}
	}
	return errs
}

// checkAuth checks that a serving pod's watch containers, listening
// beyond loopback, require a credential: --auth-tokens or --htpasswd, of
// a file in a volume mounted from a Secret of the manifests.
func checkAuth(p podTemplate, secrets map[string]*corev1.Secret) []error {
	var errs []error
	fromSecret := map[string]string{} // volume name: its Secret's
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil {
			fromSecret[v.Name] = v.Secret.SecretName
		}
	}
	for _, c := range p.Spec.Containers {
		if len(c.Args) == 0 || c.Args[0] != "watch" {
			continue
		}
		file := cmp.Or(flagValue(c.Args, "--auth-tokens"), flagValue(c.Args, "--htpasswd"))
		if file == "" {
			errs = append(errs, fmt.Errorf("%s: container %s serves beyond loopback without --auth-tokens or --htpasswd", p.Name, c.Name))
			continue
		}
		secret := ""
		for _, m := range c.VolumeMounts {
			if name, ok := fromSecret[m.Name]; ok && path.Dir(file) == path.Clean(m.MountPath) {
				secret = name
			}
		}
		switch {
		case secret == "":
			errs = append(errs, fmt.Errorf("%s: container %s: its credentials %s are not in a volume of a Secret", p.Name, c.Name, file))
		case secrets[secret] == nil:
			errs = append(errs, fmt.Errorf("%s: container %s: no Secret %s in the manifests", p.Name, c.Name, secret))
		}
	}
	return errs
}

// checkVolumeRefs checks that the claims and ConfigMap keys a pod
// template names are in the manifests.
func checkVolumeRefs(p podTemplate, claims map[string]*corev1.PersistentVolumeClaim, cms map[string]*corev1.ConfigMap) []error {
	var errs []error
	for _, v := range p.Spec.Volumes {
		if pvc := v.PersistentVolumeClaim; pvc != nil && claims[pvc.ClaimName] == nil {
			errs = append(errs, fmt.Errorf("%s: volume %s: no claim %s in the manifests", p.Name, v.Name, pvc.ClaimName))
		}
		if cmv := v.ConfigMap; cmv != nil {
			cm := cms[cmv.Name]
			if cm == nil {
				errs = append(errs, fmt.Errorf("%s: volume %s: no ConfigMap %s in the manifests", p.Name, v.Name, cmv.Name))
				continue
			}
			for _, item := range cmv.Items {
				if _, ok := cm.Data[item.Key]; !ok {
					errs = append(errs, fmt.Errorf("%s: volume %s: ConfigMap %s has no key %s", p.Name, v.Name, cmv.Name, item.Key))
				}
			}
		}
	}
	return errs
}

// checkWorkloads checks what is particular to each kind of workload.
func checkWorkloads(crons []*batchv1.CronJob, deploys []*appsv1.Deployment, daemons []*appsv1.DaemonSet, claims map[string]*corev1.PersistentVolumeClaim) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	claimedBy := map[string]string{}
	claim := func(owner string, spec corev1.PodSpec) {
		for _, v := range spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			name := v.PersistentVolumeClaim.ClaimName
			if other, ok := claimedBy[name]; ok {
				add("%s and %s both mount claim %s: a store has one writer", other, owner, name)
			}
			claimedBy[name] = owner
		}
	}

	for _, c := range crons {
		name := "CronJob " + c.Name
		if c.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
			add("%s: concurrencyPolicy %q, want Forbid", name, c.Spec.ConcurrencyPolicy)
		}
		if len(strings.Fields(c.Spec.Schedule)) != 5 {
			add("%s: schedule %q is not five cron fields", name, c.Spec.Schedule)
		}
		if rp := c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure {
			add("%s: restartPolicy %q", name, rp)
		}
		claim(name, c.Spec.JobTemplate.Spec.Template.Spec)
	}
	for _, d := range deploys {
		name := "Deployment " + d.Name
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
			add("%s: replicas %s, want 1 (a store has one writer)", name, ptrString(d.Spec.Replicas))
		}
		if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			add("%s: strategy %q, want Recreate (the old pod holds the store's ReadWriteOnce claim)", name, d.Spec.Strategy.Type)
		}
		errs = append(errs, checkSelector(name, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)...)
		claim(name, d.Spec.Template.Spec)
	}
	for _, d := range daemons {
		name := "DaemonSet " + d.Name
		errs = append(errs, checkSelector(name, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)...)
		for _, c := range d.Spec.Template.Spec.Containers {
			if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
				return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
			}) {
				add("%s: container %s: no NODE_NAME from spec.nodeName", name, c.Name)
			}
			if !mountsHostPath(d.Spec.Template.Spec, c, "/sys/fs/cgroup", "/host/sys/fs/cgroup") {
				add("%s: container %s: the node's /sys/fs/cgroup is not mounted read only at /host/sys/fs/cgroup", name, c.Name)
			}
		}
		claim(name, d.Spec.Template.Spec)
	}
	for name, c := range claims {
		if !slices.Equal(c.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
			add("claim %s: access modes %v, want [ReadWriteOnce]", name, c.Spec.AccessModes)
		}
		if _, ok := claimedBy[name]; !ok {
			add("claim %s is mounted by no workload", name)
		}
	}
	return errs
}

// checkSelector checks that a workload's selector selects its template.
func checkSelector(name string, selector, podLabels map[string]string) []error {
	if len(selector) == 0 || !labels.SelectorFromSet(selector).Matches(labels.Set(podLabels)) {
		return []error{fmt.Errorf("%s: selector %v does not select its pod labels %v", name, selector, podLabels)}
	}
	return nil
}

// mountsHostPath reports whether c mounts the host's path at mountPath,
// read only.
func mountsHostPath(spec corev1.PodSpec, c corev1.Container, path, mountPath string) bool {
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.HostPath != nil && v.HostPath.Path == path && m.MountPath == mountPath && m.ReadOnly {
				return true
			}
		}
	}
	return false
}

// checkRBAC checks that the role reads pods alone, that the binding
// gives it to the ServiceAccount the workloads run as, and that only the
// workloads that use the API get a token.
func checkRBAC(pods []podTemplate, sas map[string]bool, roles map[string]*rbacv1.ClusterRole, bindings []*rbacv1.ClusterRoleBinding) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	readOnly := []string{"get", "list", "watch"}
	for name, r := range roles {
		if len(r.Rules) == 0 {
			add("ClusterRole %s: no rules", name)
		}
		if r.AggregationRule != nil {
			add("ClusterRole %s: aggregates other roles", name)
		}
		for i, rule := range r.Rules {
			where := fmt.Sprintf("ClusterRole %s: rules[%d]", name, i)
			if !slices.Equal(rule.APIGroups, []string{""}) {
				add("%s: apiGroups %q, want [\"\"]", where, rule.APIGroups)
			}
			if len(rule.Resources) == 0 || slices.ContainsFunc(rule.Resources, func(r string) bool { return r != "pods" }) {
				add("%s: resources %v, want pods only", where, rule.Resources)
			}
			if len(rule.Verbs) == 0 || slices.ContainsFunc(rule.Verbs, func(v string) bool { return !slices.Contains(readOnly, v) }) {
				add("%s: verbs %v, want a subset of %v", where, rule.Verbs, readOnly)
			}
			if len(rule.ResourceNames) > 0 || len(rule.NonResourceURLs) > 0 {
				add("%s: resourceNames or nonResourceURLs are not expected", where)
			}
		}
	}

	bound := map[string]bool{}
	for _, b := range bindings {
		if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.APIGroup != rbacv1.GroupName || roles[b.RoleRef.Name] == nil {
			add("ClusterRoleBinding %s: roleRef %+v is not a ClusterRole of the manifests", b.Name, b.RoleRef)
		}
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != namespace || !sas[s.Name] {
				add("ClusterRoleBinding %s: subject %+v is not a ServiceAccount of the manifests", b.Name, s)
				continue
			}
			bound[s.Name] = true
		}
	}

	for _, p := range pods {
		sa := p.Spec.ServiceAccountName
		if !sas[sa] || !bound[sa] {
			add("%s: serviceAccountName %q is not the bound ServiceAccount of the manifests", p.Name, sa)
		}
		// Only the DaemonSet watches pods through the API.
		wantToken := p.Kind == "DaemonSet"
		if gotToken := p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken; gotToken != wantToken {
			add("%s: automountServiceAccountToken %v, want %v", p.Name, gotToken, wantToken)
		}
	}
	return errs
}

// checkServices checks that each Service selects the Deployment's pods,
// not the DaemonSet's, and targets a port they serve.
func checkServices(services []*corev1.Service, deploys []*appsv1.Deployment, daemons []*appsv1.DaemonSet) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, s := range services {
		name := "Service " + s.Name
		if s.Spec.Type != corev1.ServiceTypeClusterIP {
			add("%s: type %q, want ClusterIP", name, s.Spec.Type)
		}
		if len(s.Spec.Selector) == 0 {
			add("%s: no selector", name)
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		var selected []*appsv1.Deployment
		for _, d := range deploys {
			if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				selected = append(selected, d)
			}
		}
		if len(selected) == 0 {
			add("%s: selector %v selects no Deployment's pods", name, s.Spec.Selector)
		}
		for _, d := range daemons {
			if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				add("%s: selector %v selects DaemonSet %s's pods too", name, s.Spec.Selector, d.Name)
			}
		}
		for _, sp := range s.Spec.Ports {
			for _, d := range selected {
				for _, c := range d.Spec.Template.Spec.Containers {
					if _, ok := containerPort(c, sp.TargetPort.String()); !ok {
						add("%s: port %s: targetPort %s is not a port of Deployment %s's container %s", name, sp.Name, sp.TargetPort.String(), d.Name, c.Name)
					}
				}
			}
		}
	}
	return errs
}

// checkConfigMaps checks the watch configurations with heapscope's own
// decoder: heapscope.yaml (its file_sd file beside it) for the
// Deployment and the CronJob, node.yaml for the DaemonSet, whose every
// group must discover the pods of its own node and read their cgroups
// where the DaemonSet mounts the node's.
func checkConfigMaps(cms map[string]*corev1.ConfigMap) []error {
	var errs []error
	for name, cm := range cms {
		if remote, ok := cm.Data["heapscope.yaml"]; ok {
			if _, err := loadWatchConfig(cm.Data, "heapscope.yaml"); err != nil {
				errs = append(errs, fmt.Errorf("ConfigMap %s: heapscope.yaml: %w", name, err))
			}
			if strings.Contains(remote, "kubernetes:") {
				errs = append(errs, fmt.Errorf("ConfigMap %s: heapscope.yaml (the Deployment's and CronJob's) discovers pods", name))
			}
		}
		if _, ok := cm.Data["node.yaml"]; !ok {
			continue
		}
		c, err := loadWatchConfig(cm.Data, "node.yaml")
		if err != nil {
			errs = append(errs, fmt.Errorf("ConfigMap %s: node.yaml: %w", name, err))
			continue
		}
		for i, g := range c.Groups {
			k := g.Kubernetes
			if k == nil || k.Node != testNode || len(g.Static) > 0 || len(g.FileSD) > 0 {
				// Any other target would be watched once per node.
				errs = append(errs, fmt.Errorf("ConfigMap %s: node.yaml: groups[%d] is not a kubernetes group of node $NODE_NAME", name, i))
			} else if k.CgroupRoot != "/host/sys/fs/cgroup" {
				errs = append(errs, fmt.Errorf("ConfigMap %s: node.yaml: groups[%d]: cgroup_root %q is not where the DaemonSet mounts the node's cgroups", name, i, k.CgroupRoot))
			}
		}
	}
	return errs
}

// testNode is the node the DaemonSet's configuration is loaded on.
const testNode = "node-a"

// loadWatchConfig writes a ConfigMap's keys to a directory, as its volume
// does, and loads the config key with heapscope watch's decoder, on node
// testNode, its targets resolved: a kubernetes section's from an API
// server with one opted-in pod on testNode and one on another node, of
// which it must find the first alone.
func loadWatchConfig(data map[string]string, key string) (*config.Config, error) {
	dir, err := os.MkdirTemp("", "heapscope-configmap-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			return nil, err
		}
	}
	defer os.Setenv("NODE_NAME", os.Getenv("NODE_NAME"))
	os.Setenv("NODE_NAME", testNode)
	var warnings []error
	pods := &kubesd.Discovery{Client: kubetest.New(annotatedPod("api", testNode, "10.1.0.7"), annotatedPod("db", "node-b", "10.1.0.8"))}
	c, err := config.Load(filepath.Join(dir, key), config.Options{CheckTrigger: trigger.Check, Pods: pods,
		Warn: func(err error) { warnings = append(warnings, err) }})
	if err != nil {
		return nil, err
	}
	targets, err := c.Targets(context.Background())
	if err != nil {
		return nil, fmt.Errorf("resolve targets: %w", err)
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("resolve targets: %v", warnings)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("no targets")
	}
	for _, t := range targets {
		if node, ok := t.Labels["node"]; ok && node != testNode {
			return nil, fmt.Errorf("target %s is a pod of node %s, not of the watcher's own node %s", t.Key, node, testNode)
		}
	}
	return c, nil
}

// annotatedPod is a running pod that opts in with heapscope.io/* annotations.
func annotatedPod(name, node, ip string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: "uid-" + types.UID(name),
			Annotations: map[string]string{kube.AnnotationScrape: "true", kube.AnnotationPort: "6060"}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
}

// containerPort resolves a port given by number or name to c's port.
func containerPort(c corev1.Container, p string) (int32, bool) {
	for _, cp := range c.Ports {
		if cp.Name == p || strconv.Itoa(int(cp.ContainerPort)) == p {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

// flagValue returns the value after flag in args ("--flag value" or
// "--flag=value").
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

func isTrue(b *bool) bool { return b != nil && *b }

func is[T comparable](p *T, v T) bool { return p != nil && *p == v }

func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
