// Package pyroscope exports heapscope's stored captures to a Grafana
// Pyroscope server, so that teams on Pyroscope see them in its UI beside
// the profiles of its own SDK and collectors. The steps:
//
//  1. Read: a run directory's result.json and the profiles Select picks
//     (the side effect: files).
//  2. Build: the push, pure — one series a profile type, named as
//     Pyroscope names the profiles of its Go SDK: process_cpu (the CPU
//     profile of the window), memory (alloc_* over the window from the
//     first and last heap snapshots, inuse_* from the last), goroutine
//     (the last goroutine profile), mutex and block (over the window), all
//     with __delta__="false", as the values are the window's own.
//  3. Push: Exporter sends it through Pyroscope's Connect push API
//     (push.v1.PusherService/Push) with basic auth and a tenant when set,
//     requests bounded in size, retried with backoff when the server is
//     unavailable or overloaded.
//
// Labels follow Prometheus' rules, which Pyroscope's validation applies:
// see Labels. service_name, which Pyroscope requires and selects by first,
// is the target's service_name or job label, else namespace/container for
// a Kubernetes pod, else the target's host:port (see ServiceName); a group
// of replicas is best given a service_name label in the config.
//
// What a capture adds to Pyroscope's index matters: each distinct label
// set is a series, and Pyroscope bounds the active series of a tenant
// (5000 by default). heapscope_kind (run or bundle) and heapscope_trigger
// (a bundle's trigger expression) are labels, since their values are few
// (two kinds, the config's triggers) and they let a query keep to the
// scheduled captures or to the moments a trigger fired. The run's own
// identity is not: a label unique to each capture would make each capture
// a new series. It seeds the pushed profiles' IDs instead, and a capture is
// found in heapscope's history by its service and time.
//
// Pyroscope refuses profiles older than its validation.reject-older-than
// (1 h by default): captures are pushed as they are stored, not back
// filled.
package pyroscope
