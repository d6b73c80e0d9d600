package load

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"
)

// The closed model over plain HTTP/1.1 keep-alive runs on event loops, as
// wrk does, rather than on a goroutine per connection: a goroutine per
// connection costs the runtime a park, a wake-up, a read that finds nothing
// and the scheduler's bookkeeping per request, which together came to more
// CPU per request than wrk's whole client. Each loop owns an epoll instance
// and a share of the connections, and handles every ready connection of a
// wake-up in one pass: one write, one read and a share of one wait per
// request. A loop waits in epoll_wait itself for at most loopWait, then
// yields to the other goroutines if it has not for loopWait: waiting
// through the runtime's poller instead cost a wake-up of the runtime's
// poller thread and a park of the goroutine per wait, more than the rest
// of the request at low concurrency.

// loopWait is the longest a loop waits for its connections, and how often
// at least it yields to the other goroutines: how late, at worst, the
// runtime's timers fire and a stop or a garbage collection starts, with
// GOMAXPROCS 1.
const loopWait = time.Millisecond

// loopTick bounds how late a loop notices a request past its Timeout or the
// end of a connection's pause after a refusal.
func loopTick(timeout time.Duration) time.Duration {
	return max(min(timeout/deadlineSlack, refusedPause), loopWait)
}

// loopReadSize is the size of a loop's read buffers; one grows to hold a
// larger response.
const loopReadSize = 4 << 10

// A connection holds a read buffer only while part of a response waits in
// it; the loop lends its spare buffers, last in first out, to the
// connections it reads. With responses that come whole, every read goes
// into the same buffer, warm in the cache, rather than into one buffer per
// connection: at 512 connections those were 2 MiB, and the kernel's copy
// into them cost three times as much.

// loopConn is one worker's connection in an event loop.
type loopConn struct {
	w  *worker
	fd int // -1 when closed
	// rbuf holds rlen bytes of a response; it is nil when rlen is 0,
	// except while the connection reads.
	rbuf []byte
	rlen int
	// pending is the part of the request the socket did not take yet.
	pending []byte
	// busy says a request is outstanding: seq, sent at sent.
	busy bool
	seq  uint64
	sent time.Time
	// head says the request outstanding is a HEAD, whose response
	// parseQuick cannot read.
	head bool
	// served says the connection carried a response, so a failure of the
	// next request may be the server closing it as idle: retried once.
	served, retried bool
	eof             bool
	resumeAt        time.Time // after a refusal, no request before
	in, out         uint64
	// first and last are the first send and the last end on c.
	first, last time.Time
}

// eventLoop is one loop's state.
type eventLoop struct {
	r     *runner
	cl    *httpClient
	epfd  int
	conns []*loopConn
	next  *atomic.Uint64
	end   time.Time
	tick  time.Duration

	sess *httpSession // renders requests
	// sending says send is running: a failure then resumes the connection
	// at the next tick rather than sending again at once.
	sending bool
	resp    fasthttp.Response
	rd      chunkReader
	br      *bufio.Reader

	events []syscall.EpollEvent
	// spare are the read buffers no connection holds.
	spare   [][]byte
	aborted atomic.Bool
	// rec records the requests of all the loop's connections: one
	// goroutine, no lock shared with another loop.
	rec *shard
}

// canLoop reports whether the closed model of cl can run on event loops:
// HTTP/1.1 without TLS, keep-alive, one address.
func (c *httpClient) canLoop(targets []*target) bool {
	if c.opts.NoKeepAlive || len(c.addrs) != 1 {
		return false
	}
	for _, t := range targets {
		if t.std || t.tls {
			return false
		}
	}
	return true
}

// closedLoops runs the closed model on event loops; it returns false, having
// done nothing, when it cannot.
func (r *runner) closedLoops(workers *sync.WaitGroup, ready []*worker) bool {
	cl, ok := r.cl.(*httpClient)
	if !ok || !cl.canLoop(r.g.targets) || len(ready) == 0 {
		return false
	}
	n := min(runtime.GOMAXPROCS(0), len(ready))
	loops := make([]*eventLoop, 0, n)
	var next atomic.Uint64
	var end time.Time
	if d := r.g.opts.Duration; d > 0 {
		end = r.start.Add(d)
	}
	for i := range n {
		l, err := newEventLoop(r, cl, &next, end)
		if err != nil {
			for _, l := range loops {
				l.close()
			}
			return false
		}
		l.sess = ready[i].sess.(*httpSession)
		loops = append(loops, l)
	}
	for i, w := range ready {
		loops[i%n].add(w)
	}
	cl.onAbort(func() {
		for _, l := range loops {
			l.aborted.Store(true)
		}
	})
	for _, l := range loops {
		workers.Go(func() {
			l.run()
			l.close()
		})
	}
	return true
}

func newEventLoop(r *runner, cl *httpClient, next *atomic.Uint64, end time.Time) (*eventLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	l := &eventLoop{
		r: r, cl: cl, epfd: epfd, next: next, end: end,
		tick:   loopTick(r.g.opts.Timeout),
		events: make([]syscall.EpollEvent, 256),
	}
	l.br = bufio.NewReaderSize(&l.rd, readBufferSize)
	l.rec = r.rec.loopShard()
	return l, nil
}

// add gives w's warm connection, if it has one, to the loop.
func (l *eventLoop) add(w *worker) {
	c := &loopConn{w: w, fd: -1}
	l.conns = append(l.conns, c)
	s := w.sess.(*httpSession)
	if s.conn == nil || s.conn.conn == nil {
		return
	}
	fd, err := detach(s.conn.conn)
	s.conn.conn = nil
	if err == nil {
		l.attach(c, fd)
	}
}

// detach takes the socket of conn out of the runtime's hands: it returns
// a descriptor of its own, non-blocking, and closes conn.
func detach(conn net.Conn) (int, error) {
	defer conn.Close()
	cc, ok := conn.(*countedConn)
	if !ok {
		return -1, errors.ErrUnsupported
	}
	tc, ok := cc.Conn.(*net.TCPConn)
	if !ok {
		return -1, errors.ErrUnsupported
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	if cerr := rc.Control(func(s uintptr) { fd, err = syscall.Dup(int(s)) }); cerr != nil {
		return -1, cerr
	}
	if err != nil {
		return -1, err
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

func (l *eventLoop) attach(c *loopConn, fd int) {
	ev := syscall.EpollEvent{Events: epollEvents, Fd: int32(indexOf(l.conns, c))}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		syscall.Close(fd)
		return
	}
	c.fd, c.rlen, c.eof, c.served, c.pending = fd, 0, false, false, nil
}

// epollEvents is what a loop waits for on a connection, edge-triggered:
// an event per arrival of bytes, so one read that does not fill the buffer
// has taken all there was.
const epollEvents = syscall.EPOLLIN | syscall.EPOLLOUT | syscall.EPOLLRDHUP | 1<<31 // EPOLLET

func indexOf(conns []*loopConn, c *loopConn) int {
	for i, x := range conns {
		if x == c {
			return i
		}
	}
	return -1
}

// dial opens c's connection.
func (l *eventLoop) dial(c *loopConn) error {
	d := net.Dialer{Timeout: l.r.g.opts.Timeout}
	raw, err := d.Dial("tcp", l.cl.addrs[0])
	if err != nil {
		return err
	}
	conn, err := l.cl.conns.track(raw)
	if err != nil {
		return err
	}
	fd, err := detach(conn)
	if err != nil {
		return err
	}
	l.attach(c, fd)
	if c.fd < 0 {
		return errors.New("cannot add the connection to the event loop")
	}
	return nil
}

func (l *eventLoop) closeConn(c *loopConn) {
	if c.fd >= 0 {
		syscall.Close(c.fd) // also leaves the epoll instance
		c.fd = -1
	}
	c.rlen, c.pending, c.eof = 0, nil, false
	l.release(c)
}

// release gives c's read buffer back to the loop when it holds nothing.
func (l *eventLoop) release(c *loopConn) {
	if c.rlen == 0 && c.rbuf != nil {
		l.spare = append(l.spare, c.rbuf)
		c.rbuf = nil
	}
}

func (l *eventLoop) close() {
	var in, out uint64
	for _, c := range l.conns {
		l.closeConn(c)
		in += c.in
		out += c.out
		l.rec.span(c.first, c.last)
	}
	l.cl.conns.add(in, out)
	syscall.Close(l.epfd)
}

// run sends and receives until the window ends and every request ended.
func (l *eventLoop) run() {
	now := time.Now()
	for _, c := range l.conns {
		l.start(c, now)
	}
	sweepAt, yielded := now.Add(l.tick), now
	for !l.finished(now) {
		if l.aborted.Load() {
			l.failAll(errAborted)
			return
		}
		// The wait is in whole milliseconds, rounded up: rounded down, the
		// last millisecond before a sweep would poll without waiting,
		// thousands of system calls that find nothing.
		wait := loopWait
		if d := sweepAt.Sub(now); d < wait {
			wait = max(d, 0)
		}
		n, err := epollWait(l.epfd, l.events, int((wait+time.Millisecond-1)/time.Millisecond))
		if err != nil && err != syscall.EINTR {
			// The instance failed: nothing more can be sent.
			l.failAll(err)
			return
		}
		now = time.Now()
		l.handle(l.events[:n], now)
		if !now.Before(sweepAt) {
			l.sweep(now)
			sweepAt = now.Add(l.tick)
		}
		if now.Sub(yielded) >= loopWait {
			runtime.Gosched()
			yielded = time.Now()
			now = yielded
		}
	}
}

// finished reports whether no request is outstanding and none may start
// at now.
func (l *eventLoop) finished(now time.Time) bool {
	if limit := l.r.g.opts.MaxRequests; !l.stopped(now) && (limit == 0 || l.next.Load() < limit) {
		return false
	}
	return l.done()
}

// done reports whether no request is outstanding and none may start.
func (l *eventLoop) done() bool {
	for _, c := range l.conns {
		if c.busy || !c.resumeAt.IsZero() {
			return false
		}
	}
	return true
}

// handle handles the ready connections.
func (l *eventLoop) handle(events []syscall.EpollEvent, now time.Time) {
	for _, ev := range events {
		c := l.conns[ev.Fd]
		if c.fd < 0 {
			continue
		}
		if ev.Events&syscall.EPOLLOUT != 0 && len(c.pending) > 0 {
			if !l.flush(c, now) {
				continue
			}
		}
		if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
			l.receive(c)
		}
	}
}

// stopped reports whether no request may start at now.
func (l *eventLoop) stopped(now time.Time) bool {
	return l.r.stopped() || !l.end.IsZero() && !now.Before(l.end)
}

// start sends c's next request, if one may start.
func (l *eventLoop) start(c *loopConn, now time.Time) {
	c.busy = false
	if l.stopped(now) || l.aborted.Load() {
		c.resumeAt = time.Time{}
		return
	}
	if !c.resumeAt.IsZero() {
		if now.Before(c.resumeAt) {
			return
		}
		c.resumeAt = time.Time{}
	}
	seq := l.next.Add(1) - 1
	if limit := l.r.g.opts.MaxRequests; limit > 0 && seq >= limit {
		return
	}
	c.seq, c.retried = seq, false
	l.send(c)
}

// send writes request c.seq on c, dialling first when needed.
func (l *eventLoop) send(c *loopConn) {
	l.sending = true
	defer func() { l.sending = false }()
	targets := l.r.g.targets
	t := targets[c.seq%uint64(len(targets))]
	c.busy, c.head = true, t.method == http.MethodHead
	c.sent = time.Now()
	if c.first.IsZero() {
		c.first = c.sent
	}
	l.rec.begin(c.sent)
	if c.fd < 0 {
		if err := l.dial(c); err != nil {
			l.fail(c, err, time.Now())
			return
		}
	}
	wire, err := l.render(c, t)
	if err != nil {
		l.fail(c, err, time.Now())
		return
	}
	c.pending = wire
	l.flush(c, c.sent)
}

// render returns the bytes of request c.seq to t.
func (l *eventLoop) render(c *loopConn, t *target) ([]byte, error) {
	s := l.sess
	if t != s.cur {
		s.load(t)
	}
	if t.constURL != nil && s.wire != nil {
		return s.wire, nil
	}
	c.w.buf = t.url.Expand(c.w.buf[:0], c.seq, uint64(l.r.g.opts.Seed))
	s.req.SetRequestURIBytes(c.w.buf)
	s.req.URI().DisablePathNormalizing = true
	s.buf.Reset()
	if s.scratch == nil {
		s.scratch = bufio.NewWriterSize(&s.buf, writeBufferSize)
	} else {
		s.scratch.Reset(&s.buf)
	}
	if err := s.req.Write(s.scratch); err != nil {
		return nil, err
	}
	if err := s.scratch.Flush(); err != nil {
		return nil, err
	}
	return s.buf.Bytes(), nil
}

// flush writes what is pending on c; it reports whether c is still open.
func (l *eventLoop) flush(c *loopConn, now time.Time) bool {
	for len(c.pending) > 0 {
		n, err := rawIO(syscall.SYS_WRITE, c.fd, c.pending)
		if n > 0 {
			c.out += uint64(n)
			c.pending = c.pending[n:]
		}
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			// The socket's buffer is full: EPOLLOUT says when it is not.
			return true
		case err != nil:
			l.fail(c, err, now)
			return false
		}
	}
	c.pending = nil
	return true
}

// receive reads what c has and ends its request when the response is whole.
func (l *eventLoop) receive(c *loopConn) {
	if c.rbuf == nil {
		if n := len(l.spare); n > 0 {
			c.rbuf = l.spare[n-1]
			l.spare = l.spare[:n-1]
		} else {
			c.rbuf = make([]byte, loopReadSize)
		}
	}
	l.read(c)
	l.release(c)
}

// read reads what c has into its read buffer, and ends its request when
// the response is whole.
func (l *eventLoop) read(c *loopConn) {
	for {
		if c.rlen == len(c.rbuf) {
			limit := l.r.g.opts.MaxBody + readBufferSize
			if len(c.rbuf) >= limit {
				break
			}
			c.rbuf = append(c.rbuf, make([]byte, min(len(c.rbuf), limit-len(c.rbuf)))...)
			c.rbuf = c.rbuf[:cap(c.rbuf)]
		}
		n, err := rawIO(syscall.SYS_READ, c.fd, c.rbuf[c.rlen:])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			break
		}
		if err != nil {
			l.fail(c, err, time.Now())
			return
		}
		if n == 0 {
			c.eof = true
			break
		}
		c.in += uint64(n)
		c.rlen += n
		if c.rlen < len(c.rbuf) {
			// The socket had no more: edge-triggered, the next bytes
			// bring another event.
			break
		}
	}
	now := time.Now()
	if !c.busy {
		if c.rlen > 0 || c.eof {
			// Nothing was asked: the server closed the idle connection,
			// or said something out of turn.
			l.closeConn(c)
		}
		return
	}
	if c.rlen == 0 {
		if c.eof {
			l.fail(c, io.EOF, now)
		}
		return
	}
	res, used, status, closing := quickOther, 0, 0, false
	if !c.head {
		res, used, status, closing = parseQuick(c.rbuf[:c.rlen], l.r.g.opts.MaxBody)
	}
	switch {
	case res == quickMore && !c.eof:
		return // not all there yet
	case res != quickDone:
		// fasthttp's, also to say how a response cut short failed.
		l.rd.reset(c.rbuf[:c.rlen], c.eof)
		l.br.Reset(&l.rd)
		// A HEAD response says the length of a body it does not send.
		l.resp.SkipBody = c.head
		err := l.resp.ReadLimitBody(l.br, l.r.g.opts.MaxBody)
		if err != nil && l.rd.short {
			if c.rlen >= l.r.g.opts.MaxBody+readBufferSize {
				l.fail(c, errBodyTooLarge, now)
			}
			return // not all there yet
		}
		if err != nil {
			l.fail(c, err, now)
			return
		}
		used = c.rlen - len(l.rd.b) - l.br.Buffered()
		status, closing = l.resp.StatusCode(), l.resp.ConnectionClose()
	}
	c.rlen = copy(c.rbuf, c.rbuf[used:c.rlen])
	c.served = true
	c.last = now
	l.rec.record(c.sent, c.sent, now, status, false, kindNone)
	if closing || c.eof {
		l.closeConn(c)
	}
	l.start(c, now)
}

// fail ends c's request with err, unless it is the first failure of a
// request on a connection that served before, which is sent again on a
// new connection.
func (l *eventLoop) fail(c *loopConn, err error, now time.Time) {
	stale := c.served && !c.retried && isStale(err)
	l.closeConn(c)
	if !c.busy {
		return
	}
	if stale && !l.aborted.Load() {
		c.retried = true
		l.send(c)
		return
	}
	kind := classify(l.r.ctx, err)
	if kind != kindTimeout && kind != kindCanceled && l.r.cut.Load() {
		kind = kindUnfinished
	}
	c.last = now
	l.rec.record(c.sent, c.sent, now, 0, false, kind)
	c.busy = false
	switch kind {
	case kindCanceled:
		return
	case kindRefused, kindDNS:
		c.resumeAt = now.Add(refusedPause)
		return
	}
	if l.sending {
		c.resumeAt = now
		return
	}
	l.start(c, now)
}

// sweep fails the requests past their Timeout and resumes the paused
// connections.
func (l *eventLoop) sweep(now time.Time) {
	timeout := l.r.g.opts.Timeout
	for _, c := range l.conns {
		switch {
		case c.busy && now.Sub(c.sent) >= timeout:
			l.fail(c, os.ErrDeadlineExceeded, now)
		case !c.busy && !c.resumeAt.IsZero():
			if l.stopped(now) {
				c.resumeAt = time.Time{}
			} else if !now.Before(c.resumeAt) {
				l.start(c, now)
			}
		}
	}
}

// failAll fails the outstanding requests and stops the loop.
func (l *eventLoop) failAll(err error) {
	now := time.Now()
	l.aborted.Store(true)
	for _, c := range l.conns {
		c.resumeAt = time.Time{}
		if c.busy {
			c.served = false
			l.fail(c, err, now)
		}
	}
}

// chunkReader reads a byte slice, then says whether the slice ended the
// stream (io.EOF) or more may come (short).
type chunkReader struct {
	b     []byte
	eof   bool
	short bool
}

// errShort is what chunkReader returns at the end of what has arrived.
var errShort = errors.New("response not all received")

func (r *chunkReader) reset(b []byte, eof bool) { r.b, r.eof, r.short = b, eof, false }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		if r.eof {
			return 0, io.EOF
		}
		r.short = true
		return 0, errShort
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// The loops' system calls are made raw, without telling the runtime: on
// non-blocking descriptors they never block, and a call the runtime knows
// of lets its monitor hand the loop's processor to another thread whenever
// the call outlasts a tick (loopback writes often do), which costs a
// thread wake-up and a context switch each time.

// rawIO reads or writes (trap) fd.
func rawIO(trap uintptr, fd int, b []byte) (int, error) {
	r, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// epollWait returns the ready events of epfd, waiting for at most ms
// milliseconds. The runtime does not see the wait: loopWait keeps it short.
func epollWait(epfd int, events []syscall.EpollEvent, ms int) (int, error) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(unsafe.SliceData(events))), uintptr(len(events)), uintptr(ms), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
