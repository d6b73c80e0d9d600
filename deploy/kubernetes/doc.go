// Package kubernetes holds heapscope's Kubernetes manifests (the YAML files
// beside this one, applied with kubectl apply -k), not Go code. Its tests
// decode every manifest strictly into the k8s.io/api types, so a misspelt
// field is an error rather than a setting the API server drops, and hold
// the manifests to their security properties: non-root containers with a
// read-only root filesystem and no capabilities, resource limits with
// GOMEMLIMIT below the memory limit, read-only host mounts, and an RBAC
// role that reads pods and nothing else.
package kubernetes
