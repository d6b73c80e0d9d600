// Package sysmem reads Linux process and memory facts from /proc and cgroupfs.
//
// It answers the questions a profiling run asks about a local process:
//
//   - how much of it is resident (Proc.Status, from /proc/PID/status);
//   - where that memory lives, mapping by mapping (Proc.Smaps and
//     ParseSmaps, from /proc/PID/smaps), and which mappings are the Go heap
//     (GoHeap, and ArenaCandidate for mappings that stream by);
//   - which limits it runs under (Proc.Cgroup, cgroup v1, v2 or hybrid
//     hosts), how much of its cgroup's usage is anonymous memory rather
//     than page cache (Cgroup.Split), what the kubelet and the OOM
//     killer count against the limit (Cgroup.WorkingSet), how many of its
//     processes the OOM killer has killed (ReadOOMKills), and with which
//     Go settings (Proc.GoEnv, from /proc/PID/environ; GoEnv.MemoryLimit);
//   - what it is, when it started and how long it has run
//     (Proc.BuildInfo, Proc.Started, Proc.Uptime);
//   - which process serves a local TCP port (Proc.ListeningPID), or
//     each of many ports from one reading of the machine's sockets
//     (Listeners.PID).
//
// Everything that reads the machine is a method of Proc (or goes through
// one, as Listeners does), whose Root names
// the filesystem root to read from, so tests point it at a tree under
// testdata. The parsers behind the methods take an io.Reader or bytes and
// touch nothing else; they are fuzzed.
//
// The parsers are ours rather than github.com/prometheus/procfs's:
//
//   - procfs has no per-mapping smaps (it sums smaps into a rollup). Ours
//     is written for big files, a service with many threads or mapped
//     files having tens of thousands of mappings: one read buffer, no
//     allocation per line, pathnames shared between the mappings of a
//     file. BenchmarkParseSmaps reads 100,000 mappings (73 MB) at 500 to
//     650 MB/s with some 2,700 allocations on a 2-core machine.
//   - procfs's ProcStatus has no thread count and ignores values it cannot
//     parse. Proc.Status reads a service's status in about 5 µs with 6
//     allocations, where procfs's Proc.NewStatus takes 12 µs and 111
//     allocations (the same file, on the same machine).
//   - /proc/PID/stat, /proc/stat, /proc/net/tcp, environ and cgroup
//     files take a few lines each, and parsing them from an io.Reader or
//     bytes is what lets them be fuzzed.
//
// Errors from reading a process's files name the file ("read
// /proc/42/smaps: ..."). When the process does not exist, or exits while
// it is being read, the error says "process 42 not found" and matches
// fs.ErrNotExist; when the file is not readable by this user, it matches
// fs.ErrPermission.
package sysmem
