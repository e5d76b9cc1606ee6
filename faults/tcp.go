package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// TCPFaults are the faults a TCPProxy applies to the connections it
// carries: the faults of a service's dependencies (Redis,
// Postgres). The zero value passes traffic untouched.
type TCPFaults struct {
	// Latency holds each chunk of data from the upstream for this long
	// before it reaches the client. Chunks are held in a pipeline, not one
	// after another, so one request/answer exchange grows by Latency, not
	// by twice it nor by Latency per packet.
	Latency time.Duration
	// LatencyRate is the share of exchanges (upstream answers) held; 0
	// means every one. It is the rate of the HTTP proxy's delay fault.
	LatencyRate float64
	// Jitter adds a uniform draw from [-Jitter, +Jitter] to each hold
	// (never below 0, and never reordering data).
	Jitter time.Duration
	// Down refuses the dependency: every open connection is reset, and a
	// new one is accepted and reset at once.
	Down bool
	// ResetAfter resets a connection (both sides) once this many bytes
	// have passed through it, both directions counted; 0 never.
	ResetAfter int64
	// ResetRate is the share of new connections reset at the first data
	// from the upstream; it is the rate of the HTTP proxy's reset fault.
	ResetRate float64
	// Bandwidth caps each connection's upstream-to-client throughput in
	// bytes per second; 0 means no cap.
	Bandwidth int64
	// CutRate is the share of chunks, either way, at which the connection
	// is cut (both sides reset) instead of the chunk passed on: a queue
	// consumer cut off between a delivery and its acknowledgement
	// (KindConsumerCut).
	CutRate float64
}

// MaxLatency bounds a hold (Latency, Jitter): longer, a dependency is
// down, which Down says.
const MaxLatency = time.Minute

// Validate reports the first value out of range.
func (f TCPFaults) Validate() error {
	switch {
	case f.Latency < 0 || f.Latency > MaxLatency:
		return fmt.Errorf("latency %v: want 0 to %v (a dependency that never answers is --down)", f.Latency, MaxLatency)
	case f.Jitter < 0 || f.Jitter > MaxLatency:
		return fmt.Errorf("jitter %v: want 0 to %v", f.Jitter, MaxLatency)
	case f.LatencyRate < 0 || f.LatencyRate > 1:
		return fmt.Errorf("latency rate %v: want a share in [0, 1]", f.LatencyRate)
	case f.ResetRate < 0 || f.ResetRate > 1:
		return fmt.Errorf("reset rate %v: want a share in [0, 1]", f.ResetRate)
	case f.ResetAfter < 0:
		return fmt.Errorf("reset after %d bytes: want 0 or more", f.ResetAfter)
	case f.CutRate < 0 || f.CutRate > 1:
		return fmt.Errorf("cut rate %v: want a share in [0, 1]", f.CutRate)
	case f.Bandwidth < 0:
		return fmt.Errorf("bandwidth %d bytes/s: want 0 or more", f.Bandwidth)
	}
	return nil
}

// ErrNotTCP is wrapped by TCPFaults.Add's error for a fault only the HTTP
// proxy injects.
var ErrNotTCP = errors.New("an HTTP fault")

// Add adds a fault the TCP proxy shares with the HTTP one, written as
// ParseSpec reads it: delay holds a share Rate of the exchanges Delay
// long (Latency, LatencyRate), reset resets a share Rate of new
// connections at their first answer (ResetRate). Any other kind is an
// error wrapping ErrNotTCP.
func (f *TCPFaults) Add(s Spec) error {
	switch s.Kind {
	case KindDelay:
		f.Latency, f.LatencyRate = s.Delay, s.Rate
	case KindReset:
		f.ResetRate = s.Rate
	default:
		return fmt.Errorf("%s is %w", s.Kind, ErrNotTCP)
	}
	return nil
}

// TCPStats count what a TCPProxy carried.
type TCPStats struct {
	// Conns is how many connections were accepted.
	Conns int64 `json:"conns"`
	// Exchanges counts upstream answers: data from the upstream that
	// follows data from the client (a request/answer roundtrip).
	Exchanges int64 `json:"exchanges"`
	// Up and Down are the bytes carried client→upstream and back.
	Up   int64 `json:"bytes_up"`
	Down int64 `json:"bytes_down"`
	// Resets is how many connections the faults reset.
	Resets int64 `json:"resets"`
	// Cuts is how many of them CutRate cut.
	Cuts int64 `json:"cuts"`
}

// TCPProxy forwards TCP connections to an upstream address and applies
// TCPFaults, which can be changed while it serves (SetFaults, or the
// control API of TCPAPI). Random draws (jitter, rates) come from the seed.
type TCPProxy struct {
	upstream string
	dialer   net.Dialer

	mu     sync.Mutex
	faults TCPFaults
	rng    *rand.Rand
	conns  map[*tcpConn]struct{}

	conns0, exchanges, up, down, resets, cuts atomic.Int64
}

// NewTCPProxy returns a proxy to upstream (host:port) with faults f and
// random draws from seed.
func NewTCPProxy(upstream string, f TCPFaults, seed uint64) (*TCPProxy, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("upstream %q: want host:port: %w", upstream, err)
	}
	return &TCPProxy{
		upstream: upstream,
		dialer:   net.Dialer{Timeout: 5 * time.Second},
		faults:   f,
		rng:      rand.New(rand.NewPCG(seed, 0x7c9)),
		conns:    map[*tcpConn]struct{}{},
	}, nil
}

// Faults returns the faults in force.
func (p *TCPProxy) Faults() TCPFaults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults
}

// SetFaults replaces the faults in force; open connections follow the new
// ones from their next chunk, and Down resets them at once.
func (p *TCPProxy) SetFaults(f TCPFaults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	p.faults = f
	var cut []*tcpConn
	if f.Down {
		for c := range p.conns {
			cut = append(cut, c)
		}
	}
	p.mu.Unlock()
	for _, c := range cut {
		c.reset()
	}
	return nil
}

// Stats returns what the proxy has carried so far.
func (p *TCPProxy) Stats() TCPStats {
	return TCPStats{
		Conns: p.conns0.Load(), Exchanges: p.exchanges.Load(),
		Up: p.up.Load(), Down: p.down.Load(), Resets: p.resets.Load(), Cuts: p.cuts.Load(),
	}
}

// Serve accepts connections on ln until ctx is done or ln fails, then
// closes ln and every connection and returns when all are closed. It
// returns nil when ctx ended it.
func (p *TCPProxy) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer p.closeAll()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		p.conns0.Add(1)
		wg.Go(func() { p.handle(ctx, c) })
	}
}

func (p *TCPProxy) closeAll() {
	p.mu.Lock()
	var all []*tcpConn
	for c := range p.conns {
		all = append(all, c)
	}
	p.mu.Unlock()
	for _, c := range all {
		c.close()
	}
}

// draw returns a float in [0, 1) from the proxy's source.
func (p *TCPProxy) draw() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.Float64()
}

// hold is how long the next exchange's data is held under f.
func (p *TCPProxy) hold(f TCPFaults) time.Duration {
	if f.Latency == 0 && f.Jitter == 0 {
		return 0
	}
	if f.LatencyRate > 0 && f.LatencyRate < 1 && p.draw() >= f.LatencyRate {
		return 0
	}
	d := f.Latency
	if f.Jitter > 0 {
		d += time.Duration((p.draw()*2 - 1) * float64(f.Jitter))
	}
	return max(d, 0)
}

// tcpConn is one proxied connection: the client's side and the upstream's.
type tcpConn struct {
	client, upstream net.Conn
	once             sync.Once
	done             chan struct{} // closed by close: held data is dropped
	passed           atomic.Int64  // bytes both ways, for ResetAfter
	sent             atomic.Bool   // client data since the last answer
}

// close closes both sides gracefully.
func (c *tcpConn) close() {
	c.once.Do(func() {
		close(c.done)
		c.client.Close()
		if c.upstream != nil {
			c.upstream.Close()
		}
	})
}

// reset closes both sides with an RST.
func (c *tcpConn) reset() {
	for _, n := range []net.Conn{c.client, c.upstream} {
		if tc, ok := n.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
	}
	c.close()
}

func (p *TCPProxy) handle(ctx context.Context, client net.Conn) {
	c := &tcpConn{client: client, done: make(chan struct{})}
	f := p.Faults()
	if f.Down {
		p.resets.Add(1)
		c.reset()
		return
	}
	up, err := p.dialer.DialContext(ctx, "tcp", p.upstream)
	if err != nil {
		c.reset() // the client sees what it would see of a dead upstream
		return
	}
	c.upstream = up
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		c.close()
	}()
	resetFirst := f.ResetRate > 0 && p.draw() < f.ResetRate

	done := make(chan struct{})
	go func() {
		defer close(done)
		p.pumpUp(c)
	}()
	p.pumpDown(c, resetFirst)
	c.close()
	<-done
}

// pumpUp copies client→upstream, counting bytes against ResetAfter.
func (p *TCPProxy) pumpUp(c *tcpConn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.client.Read(buf)
		if n > 0 {
			if !p.allow(c, n) || p.cut(c) {
				return
			}
			c.sent.Store(true)
			p.up.Add(int64(n))
			if _, werr := c.upstream.Write(buf[:n]); werr != nil {
				c.close()
				return
			}
		}
		if err != nil {
			// half-close: the upstream sees the client's EOF
			if tc, ok := c.upstream.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				_ = tc.CloseWrite()
				return
			}
			c.close()
			return
		}
	}
}

// allow counts n more bytes through c and resets it when ResetAfter is
// reached; it reports whether the bytes may pass.
func (p *TCPProxy) allow(c *tcpConn, n int) bool {
	limit := p.Faults().ResetAfter
	if total := c.passed.Add(int64(n)); limit > 0 && total > limit {
		p.resets.Add(1)
		c.reset()
		return false
	}
	return true
}

// cut resets c instead of passing a chunk on, a share CutRate of the
// time; it reports whether it did.
func (p *TCPProxy) cut(c *tcpConn) bool {
	if r := p.Faults().CutRate; r <= 0 || p.draw() >= r {
		return false
	}
	p.resets.Add(1)
	p.cuts.Add(1)
	c.reset()
	return true
}

// chunk is data from the upstream and when it may reach the client.
type chunk struct {
	data []byte
	due  time.Time
}

// pumpDown copies upstream→client. Each chunk is stamped when it arrives
// and held until its due time by a writer goroutine, so holds overlap
// rather than add up; with nothing to hold and nothing waiting, the reader
// writes it at once and no hand-off adds to what is measured.
func (p *TCPProxy) pumpDown(c *tcpConn, resetFirst bool) {
	defer c.close()
	q := make(chan chunk, 256)
	var pending atomic.Int64 // chunks handed to the writer, not yet written
	var failed atomic.Bool
	first := true
	// write delivers one chunk; false when the connection is done.
	write := func(data []byte) bool {
		if first && resetFirst {
			p.resets.Add(1)
			c.reset()
			return false
		}
		first = false
		if !p.allow(c, len(data)) || p.cut(c) {
			return false
		}
		p.down.Add(int64(len(data)))
		if _, err := c.client.Write(data); err != nil {
			return false
		}
		if bw := p.Faults().Bandwidth; bw > 0 {
			time.Sleep(time.Duration(float64(len(data)) / float64(bw) * float64(time.Second)))
		}
		return true
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for ch := range q {
			if !failed.Load() {
				if !waitUntil(ch.due, c.done) {
					failed.Store(true) // closed while holding: the data is dropped
				} else if !write(ch.data) {
					failed.Store(true)
					c.close() // unblocks the reader
				}
			}
			pending.Add(-1)
		}
	}()
	defer func() {
		close(q)
		<-writerDone
	}()
	var last time.Time
	var held time.Duration
	for {
		buf := make([]byte, 32<<10)
		n, err := c.upstream.Read(buf)
		if n > 0 {
			now := time.Now()
			if c.sent.Swap(false) {
				// an answer to data the client sent: a new exchange
				p.exchanges.Add(1)
				held = p.hold(p.Faults())
			}
			due := now.Add(held)
			if due.Before(last) {
				due = last // jitter never reorders
			}
			last = due
			if held == 0 && pending.Load() == 0 {
				// the writer is idle and has nothing queued: this is the
				// only goroutine writing now
				if !write(buf[:n]) {
					return
				}
			} else {
				pending.Add(1)
				q <- chunk{data: buf[:n], due: due}
			}
		}
		if err != nil || failed.Load() {
			return // the deferred close lets the writer deliver what is queued
		}
	}
}

// spin is how long before a hold ends its sleep stops; the rest is waited
// on the clock, so a 1ms hold costs 1ms and not a timer's slack on top.
const spin = 150 * time.Microsecond

// waitUntil returns at t, within a few µs when the machine lets it: it
// sleeps (see sleep) until shortly before, then yields until t.
//
// A long wait is on a timer that done (the connection's close) ends; it
// reports false then.
func waitUntil(t time.Time, done <-chan struct{}) bool {
	if d := time.Until(t); d > longWait {
		tm := time.NewTimer(d - longWait)
		select {
		case <-done:
			tm.Stop()
			return false
		case <-tm.C:
		}
	}
	if d := time.Until(t); d > spin {
		sleep(d - spin)
	}
	for time.Now().Before(t) {
		runtime.Gosched()
	}
	return true
}

// longWait is the part of a hold past which the wait is on a timer the
// connection's close can end: the last longWait of it is waited precisely.
const longWait = 20 * time.Millisecond
