// Package load generates HTTP load and measures it: the engine behind
// heapscope load, profile --load and demo.
//
// Two models, as the usual tools have them:
//
//   - the open model (Options.Rate, like vegeta and wrk2): requests are due
//     at intended times set by the rate (Schedule, with an optional linear
//     ramp), whatever the service does. Latency is measured from the
//     intended time, so a stalled service shows in the latency instead of
//     hiding behind fewer requests (no coordinated omission), and the
//     generator's own delay behind its schedule is measured apart (lag) and
//     reported (Result.Behind, Result.Dropped).
//   - the closed model (Options.Connections, like wrk): N connections send
//     back to back, for the most throughput; latency runs from the send.
//
// The steps of a run (Generator.Run):
//
//  1. New validates the options and compiles each Request: its URL template
//     ({seq}, {rand:N}, {pick:FILE}; see Template), its address and headers.
//  2. Run checks that every address accepts a TCP connection (an
//     unreachable target is its one error; the connections are kept for the
//     first requests), and opens the first workers' connections.
//  3. Closed model: Connections workers, each taking the next sequence
//     number and sending it as soon as its last request has ended. Over
//     plain HTTP/1.1 keep-alive to one address (on Linux), the workers'
//     connections are shared out among GOMAXPROCS event loops, as wrk's
//     threads do: each loop owns an epoll instance (edge-triggered), writes
//     a request and reads its response with one system call each, raw on
//     non-blocking sockets, waits at most 1 ms before yielding to the other
//     goroutines, and finds requests past their Timeout by a sweep. TLS,
//     HTTP/2, NoKeepAlive and several addresses take a goroutine per worker.
//     Open model: one pacer hands request i, at its intended time, to the
//     idle worker that was busy most recently (last in, first out, so that
//     the connections the load does not need stay idle), starts a new one
//     when none has come back within 200 µs, up to MaxInFlight, and
//     otherwise waits for one; a late wake-up hands out every overdue
//     request at once, so delays never accumulate. When the window ends,
//     the requests still waiting are dropped and counted. Memory is bounded
//     by MaxInFlight whatever the service does.
//  4. Each request is recorded once, when it ends, into a shard of the
//     recorder: in the closed model its worker's or event loop's, under a
//     lock no other worker or loop takes; in the open model, whose pacer
//     serialises the requests anyway, one shard for all workers. Status,
//     error kind, latency and lag go into high-dynamic-range histograms
//     (HdrHistogram's bins, 3 significant digits, allocated 64 at a time
//     when first used; a shard past 128 chunks hands them to the recorder)
//     with exact count, min, mean and max beside them, and per-second
//     figures when asked for. The shards are merged, into a
//     github.com/HdrHistogram/hdrhistogram-go histogram, for the result
//     and the progress reports. Bytes are counted on each connection.
//  5. Run returns when the window has elapsed (or MaxRequests were sent)
//     and the outstanding requests have ended. Cancelling its context stops
//     it at once: connections are closed, outstanding requests count as
//     canceled, and the Result so far comes back marked Interrupted.
//
// A worker owns its connections (one per address) and reuses one request
// and one response: sending allocates nothing (BenchmarkRun: 0 allocs/op).
// A request whose URL is constant is rendered once and its bytes copied
// after; a connection's deadline moves forward only when the next request
// would have less than its Timeout, by 1 % of the Timeout more, so that
// requests time out after between 1 and 1.01 Timeouts.
// HTTP/1.1 requests are written and responses parsed by
// github.com/valyala/fasthttp (Request.Write, Response.ReadLimitBody) over
// those connections; fasthttp's HostClient pool is not used, because it
// takes a lock per request and leaves a cleaning goroutine alive for up to
// ten seconds after the last request, and because a connection per worker
// makes the closed model's connection count exact. The event loops read
// the usual response (HTTP/1.1, a Content-Length, a status with a body) in
// place with a parser of their own, and leave the others to fasthttp's.
// HTTP/2 (h2 over TLS, h2c
// with prior knowledge) goes through net/http, which allocates per request;
// the performance targets are HTTP/1.1's.
//
// # Choosing the HTTP client
//
// Measured on a 2-core Linux VM (Intel Xeon, Go 1.26.8, shared with other
// work at the time) against a minimal net/http JSON server on 127.0.0.1
// pinned to one core, each client pinned to the other, 64 connections or
// workers back to back; client CPU is the client process's user + system
// time over its requests (BenchmarkClient and BenchmarkRun with
// HEAPSCOPE_BENCH_SERVER_CPUS=0 under taskset -c 1; wrk from
// bench/load-vs-wrk.sh; vegeta from the same loop in a module of its own,
// as it is not a dependency):
//
//	client                                         CPU/request  allocs/request  requests/s
//	wrk 4.1 (C, epoll), -t1 -c64                       5.7–5.9 µs      —            ~94k
//	net/http, tuned Transport, 64 goroutines           14.2 µs        44            ~68k
//	vegeta/v12/lib v12.13.0, 64 bounded workers        17.7 µs        many          ~56k
//	fasthttp HostClient (pooled), 64 goroutines        9.3 µs          0            ~81k
//	this package: fasthttp's codec, a connection
//	per worker (BenchmarkRun/closed; heapscope load)   8.0–9.5 µs      0            ~80–94k
//
// vegeta with its default settings (unbounded workers) collapses on one
// core: asked for 20000 requests/s it sent 3700/s at 270 µs of CPU each,
// with a p99 latency of 4.8 s. net/http (which vegeta uses) cannot meet
// "client CPU per request ≤ 1.5 × wrk's"; fasthttp's request writer and
// response parser can, with the least code of our own (the connection loop
// in client.go). The targets are measured end to end by
// bench/load-vs-wrk.sh, whose figures are in docs/performance.md.
//
// Why event loops: profiled with perf beside wrk on the same server, a
// goroutine per connection did the same kernel work per request (one
// write, one read) but spent about three times wrk's user CPU, and
// switched context six times as often: per request, a read that found
// nothing, a park and a wake-up through the runtime's poller; and the
// runtime's monitor handed the processor to another thread whenever a
// loopback write outlasted its 20 µs tick. Sharding the recorder, writing
// constant requests as bytes and moving deadlines rarely took about 5 % off;
// the event loops brought 64 connections to wrk's CPU per request on a
// busy 2-core machine, and polling less, parsing in place and sharing read
// buffers brought 2 and 512 connections within 1.1 × of it
// (docs/performance.md).
//
// Timing: intended times come from the time package; the pacer sleeps on
// one reused timer. Go's timers wake up to about 1 ms late when the process
// is otherwise idle, so at low rates requests leave up to a millisecond
// late: that shows as lag, and in latency, which counts from the intended
// time. Tests drive the pacer through testing/synctest with an in-memory
// client, and a sleeper that oversleeps on purpose.
package load
