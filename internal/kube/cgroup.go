package kube

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrCgroupNotFound is the error ContainerCgroup wraps when no layout it
// knows has the container's directory.
var ErrCgroupNotFound = errors.New("cgroup not found")

// ContainerCgroup finds the cgroup directory of a container under a host's
// cgroup root mounted at root (/host/sys/fs/cgroup in a DaemonSet's pod).
// podUID is the pod's UID, containerID the runtime's ID (a
// Target.ContainerID; a containerd:// prefix is dropped), qos the pod's QoS
// class (Guaranteed, Burstable, BestEffort; empty tries each).
//
// It knows the kubelet's layouts for both cgroup drivers, under cgroup v2
// (root/…) and under v1's memory controller (root/memory/…):
//
//	cgroupfs: kubepods/[burstable/|besteffort/]pod<uid>/<id>
//	systemd:  kubepods.slice/[kubepods-burstable.slice/]kubepods[-burstable]-pod<uid_>.slice/<runtime>-<id>.scope
//
// where uid_ is the UID with '_' for '-' and runtime is cri-containerd,
// crio or docker. The error of a container found nowhere wraps
// ErrCgroupNotFound and lists every path it looked at.
func ContainerCgroup(root, podUID, containerID, qos string) (string, error) {
	id := stripRuntime(containerID)
	if err := cgroupName("pod UID", podUID); err != nil {
		return "", err
	}
	if err := cgroupName("container ID", id); err != nil {
		return "", err
	}
	var tiers []string
	switch qos {
	case "Guaranteed", "Burstable", "BestEffort":
		tiers = []string{qos}
	case "":
		tiers = []string{"Guaranteed", "Burstable", "BestEffort"}
	default:
		return "", fmt.Errorf("find cgroup of container %s: unknown QoS class %q (want Guaranteed, Burstable or BestEffort)", id, qos)
	}
	var looked []string
	for _, base := range []string{root, filepath.Join(root, "memory")} { // v2, then v1
		for _, tier := range tiers {
			for _, dir := range cgroupCandidates(tier, podUID, id) {
				path := filepath.Join(base, dir)
				fi, err := os.Stat(path)
				if err == nil && fi.IsDir() {
					return path, nil
				}
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return "", fmt.Errorf("find cgroup of container %s: %w", id, err)
				}
				looked = append(looked, path)
			}
		}
	}
	return "", fmt.Errorf("find cgroup of container %s of pod %s under %s: %w; looked at %s",
		id, podUID, root, ErrCgroupNotFound, strings.Join(looked, ", "))
}

// cgroupCandidates gives the paths, relative to a controller's root, where
// the kubelet puts a container of a pod of a QoS tier.
func cgroupCandidates(qos, podUID, id string) []string {
	tier := strings.ToLower(qos) // burstable, besteffort
	var fsDir, sdSlice string
	if qos == "Guaranteed" {
		fsDir = filepath.Join("kubepods", "pod"+podUID)
		sdSlice = filepath.Join("kubepods.slice", "kubepods-pod"+strings.ReplaceAll(podUID, "-", "_")+".slice")
	} else {
		fsDir = filepath.Join("kubepods", tier, "pod"+podUID)
		sdSlice = filepath.Join("kubepods.slice", "kubepods-"+tier+".slice",
			"kubepods-"+tier+"-pod"+strings.ReplaceAll(podUID, "-", "_")+".slice")
	}
	return []string{
		filepath.Join(fsDir, id),
		filepath.Join(fsDir, "crio-"+id),
		filepath.Join(sdSlice, "cri-containerd-"+id+".scope"),
		filepath.Join(sdSlice, "crio-"+id+".scope"),
		filepath.Join(sdSlice, "docker-"+id+".scope"),
	}
}

// cgroupName refuses a name that is empty or would leave its directory.
func cgroupName(what, s string) error {
	if s == "" || strings.ContainsAny(s, `/\`) || s == "." || s == ".." {
		return fmt.Errorf("find cgroup: %s %q is not a name", what, s)
	}
	return nil
}
