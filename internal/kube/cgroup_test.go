package kube

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestContainerCgroup(t *testing.T) {
	const (
		uid = "1f2e3d4c-0000-4a5b-9c8d-7e6f5a4b3c2d"
		sd  = "1f2e3d4c_0000_4a5b_9c8d_7e6f5a4b3c2d" // the UID in a systemd slice
		id  = "0123456789abcdef"
	)
	tests := []struct {
		name string
		qos  string
		id   string // the container ID given, id when empty
		dir  string // the container's directory the test makes
	}{
		{name: "v1 cgroupfs guaranteed", qos: "Guaranteed", dir: "memory/kubepods/pod" + uid + "/" + id},
		{name: "v1 cgroupfs burstable", qos: "Burstable", dir: "memory/kubepods/burstable/pod" + uid + "/" + id},
		{name: "v1 cgroupfs besteffort", qos: "BestEffort", dir: "memory/kubepods/besteffort/pod" + uid + "/" + id},
		{name: "v1 systemd containerd", qos: "Burstable",
			dir: "memory/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + sd + ".slice/cri-containerd-" + id + ".scope"},
		{name: "v1 systemd docker", qos: "Guaranteed",
			dir: "memory/kubepods.slice/kubepods-pod" + sd + ".slice/docker-" + id + ".scope"},
		{name: "v1 systemd crio", qos: "BestEffort",
			dir: "memory/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + sd + ".slice/crio-" + id + ".scope"},
		{name: "v2 cgroupfs guaranteed", qos: "Guaranteed", dir: "kubepods/pod" + uid + "/" + id},
		{name: "v2 cgroupfs burstable", qos: "Burstable", dir: "kubepods/burstable/pod" + uid + "/" + id},
		{name: "v2 systemd containerd", qos: "Burstable",
			dir: "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + sd + ".slice/cri-containerd-" + id + ".scope"},
		{name: "v2 systemd guaranteed", qos: "Guaranteed",
			dir: "kubepods.slice/kubepods-pod" + sd + ".slice/cri-containerd-" + id + ".scope"},
		{name: "v2 systemd crio", qos: "BestEffort",
			dir: "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + sd + ".slice/crio-" + id + ".scope"},
		{name: "runtime prefix dropped", qos: "Burstable", id: "containerd://" + id,
			dir: "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + sd + ".slice/cri-containerd-" + id + ".scope"},
		{name: "QoS unknown", dir: "kubepods/besteffort/pod" + uid + "/" + id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, tt.dir), 0o755); err != nil {
				t.Fatal(err)
			}
			given := tt.id
			if given == "" {
				given = id
			}
			got, err := ContainerCgroup(root, uid, given, tt.qos)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(root, tt.dir); got != want {
				t.Errorf("ContainerCgroup = %s, want %s", got, want)
			}
		})
	}
}

func TestContainerCgroup_NotFound(t *testing.T) {
	root := t.TempDir()
	// The pod is there, the container not; a file of the container's name
	// is no cgroup.
	pod := filepath.Join(root, "kubepods", "burstable", "podu1")
	if err := os.MkdirAll(pod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pod, "c1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ContainerCgroup(root, "u1", "c1", "Burstable")
	if !errors.Is(err, ErrCgroupNotFound) {
		t.Fatalf("ContainerCgroup = %v, want ErrCgroupNotFound", err)
	}
	for _, looked := range []string{
		filepath.Join(root, "kubepods/burstable/podu1/c1"),
		filepath.Join(root, "memory/kubepods/burstable/podu1/c1"),
		filepath.Join(root, "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu1.slice/cri-containerd-c1.scope"),
		filepath.Join(root, "memory/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu1.slice/docker-c1.scope"),
	} {
		if !strings.Contains(err.Error(), looked+",") && !strings.HasSuffix(err.Error(), looked) {
			t.Errorf("error %q does not say it looked at %s", err, looked)
		}
	}
	if strings.Contains(err.Error(), "besteffort") {
		t.Errorf("error %q: looked outside the pod's QoS tier", err)
	}
}

func TestContainerCgroup_BadArguments(t *testing.T) {
	root := t.TempDir()
	tests := []struct {
		name, uid, id, qos, want string
	}{
		{"empty container ID", "u1", "", "Burstable", "container ID"},
		{"ID that leaves the directory", "u1", "../../etc", "Burstable", "container ID"},
		{"empty pod UID", "", "c1", "Burstable", "pod UID"},
		{"unknown QoS class", "u1", "c1", "Gold", `QoS class "Gold"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ContainerCgroup(root, tt.uid, tt.id, tt.qos)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ContainerCgroup = %v, want an error with %q", err, tt.want)
			}
		})
	}
}
