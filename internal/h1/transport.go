package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MaxIdleAge is how long a connection may sit idle before it is closed
// rather than reused. Servers close idle connections after a few seconds
// (Node.js and Apache after 5 s); one closing just as a request goes out
// would lose it, so connections are dropped well before.
const MaxIdleAge = 3 * time.Second

// maxInline is the largest request body written in the same write as the
// headers; a longer one is streamed after them.
const maxInline = 64 << 10

// Transport is an HTTP/1.1 http.RoundTripper for plain http:// requests,
// with a pool of kept-alive connections per host:port. Requests it does
// not handle go to its fallback. It is safe for concurrent use.
type Transport struct {
	fallback  http.RoundTripper
	proxy     func(*http.Request) (*url.URL, error)
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle   int
	maxHeader int
	noKeep    bool

	mu    sync.RWMutex
	pools map[string]*pool
	last  atomic.Pointer[pool] // the pool of the last request: one target, no map lookup
}

// New returns a Transport keeping up to conns idle connections per
// host:port and sending through fallback (nil: http.DefaultTransport)
// the requests it does not handle: https, a request a proxy applies to,
// one with Expect, Upgrade, userinfo in its URL or trailers, or an
// unusual URL, method, host or header (fallback then reports the error).
// A connection idle for MaxIdleAge is closed, not reused, and sooner when
// the server announced a shorter idle timeout (Keep-Alive: timeout=N: at
// half of it); every reuse is first checked (on Linux, with a
// non-blocking peek) for a close by the server or bytes it sent unasked.
//
// When fallback is an *http.Transport, its Proxy decides which requests
// go through a proxy (and so to fallback), its DialContext dials, its
// DisableKeepAlives and MaxResponseHeaderBytes apply; its other limits (MaxConnsPerHost, ResponseHeaderTimeout, IdleConnTimeout:
// MaxIdleAge here) do not. Compression is never asked for: bodies are
// the bytes the server sent.
func New(fallback http.RoundTripper, conns int) *Transport {
	if fallback == nil {
		fallback = http.DefaultTransport
	}
	t := &Transport{
		fallback:  fallback,
		maxIdle:   max(conns, 1),
		maxHeader: 10 << 20,
		pools:     map[string]*pool{},
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	t.dial = d.DialContext
	if ht, ok := fallback.(*http.Transport); ok {
		t.proxy = ht.Proxy
		if ht.DialContext != nil {
			t.dial = ht.DialContext
		}
		t.noKeep = ht.DisableKeepAlives
		if ht.MaxResponseHeaderBytes > 0 {
			t.maxHeader = int(min(ht.MaxResponseHeaderBytes, 1<<30))
		}
	}
	return t
}

// CloseIdleConnections closes the idle connections, its own and its
// fallback's. Connections in use go on and are pooled when their answer
// ends.
func (t *Transport) CloseIdleConnections() {
	t.mu.RLock()
	ps := make([]*pool, 0, len(t.pools))
	for _, p := range t.pools {
		ps = append(ps, p)
	}
	t.mu.RUnlock()
	for _, p := range ps {
		p.mu.Lock()
		idle := p.idle
		p.idle = nil
		p.mu.Unlock()
		for _, c := range idle {
			c.nc.Close()
		}
	}
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// bufs holds the buffers requests are written from (*[]byte).
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1<<10); return &b }}

// RoundTrip implements http.RoundTripper. It never sends req twice.
//
// A request sent with a Gate (WithGate) is written but its last byte and
// held until the Gate opens; one that cannot be held passes the Gate.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	g := gateOf(ctx)
	if !t.handles(req) {
		g.pass()
		return t.viaFallback(req)
	}
	if ctx.Err() != nil {
		g.pass()
		closeBody(req)
		return nil, unsent(context.Cause(ctx))
	}
	l := limitOf(ctx)
	if l != nil && !time.Now().Before(l.Deadline) {
		g.pass()
		closeBody(req)
		return nil, unsent(l.err())
	}
	closeAfter := t.noKeep || req.Close || hasToken(req.Header["Connection"], "close")
	buf := bufs.Get().(*[]byte)
	head, ok := appendHead((*buf)[:0], req, closeAfter)
	if !ok {
		bufs.Put(buf)
		g.pass()
		return t.viaFallback(req)
	}
	// A request whose body is in memory (or absent) is one message,
	// written in one write; its connection is checked for a close or
	// stray bytes in the same step (writeWait), and another taken when it
	// fails that check, nothing of the request sent. A longer body is
	// streamed, on a connection checked before.
	msg, inline, err := message(head, req)
	if err != nil {
		g.pass()
		putBuf(buf, msg)
		return nil, unsent(err)
	}
	if g != nil && !inline {
		g.pass() // a streamed body is not held
		g = nil
	}
	p := t.pool(req.URL.Host)
	for {
		// A held request is not written by writeWait, which checks a
		// reused connection: it is checked when taken.
		c, err := p.get(ctx, l, !inline || g != nil)
		if err != nil {
			g.pass()
			putBuf(buf, msg)
			if !inline {
				closeBody(req)
			}
			return nil, unsent(cause(ctx, err))
		}
		if !c.watch(ctx, l) {
			g.pass()
			putBuf(buf, msg)
			if !inline {
				closeBody(req)
			}
			c.finish(false)
			return nil, unsent(context.Cause(ctx))
		}
		var n int
		if g != nil {
			n, err = c.writeHeld(ctx, msg, g)
			putBuf(buf, msg)
		} else if inline {
			n, err = c.writeWait(msg)
			if err == errStale {
				c.finish(false)
				continue
			}
			putBuf(buf, msg)
		} else {
			n, err = c.writeStreamed(buf, msg, req)
		}
		if err != nil {
			c.finish(false)
			err = cause(ctx, err)
			if n == 0 {
				return nil, unsent(err)
			}
			return nil, err
		}
		resp, err := c.readResponse(req, closeAfter)
		if err != nil {
			c.finish(false)
			return nil, cause(ctx, err)
		}
		return resp, nil
	}
}

// putBuf gives b, grown from *buf, back to bufs unless it grew large.
func putBuf(buf *[]byte, b []byte) {
	if cap(b) <= 16<<10 {
		*buf = b[:0]
		bufs.Put(buf)
	}
}

// handles reports whether req is one for this transport rather than its
// fallback.
func (t *Transport) handles(req *http.Request) bool {
	u := req.URL
	if u == nil || u.Scheme != "http" || u.Host == "" || u.Opaque != "" || u.User != nil ||
		len(req.Trailer) > 0 || !validHost(u.Host) || (req.Host != "" && !validHost(req.Host)) ||
		(req.Method != "" && !validToken(req.Method)) || req.Method == http.MethodConnect {
		return false
	}
	if (req.Body == nil || req.Body == http.NoBody) && req.ContentLength != 0 {
		return false // net/http says what is wrong with it
	}
	if hasCTL(u.RawQuery) || hasCTL(u.EscapedPath()) {
		return false // net/http refuses it, rather than split the request line
	}
	h := req.Header
	if len(h["Expect"]) > 0 || len(h["Upgrade"]) > 0 {
		return false
	}
	if t.proxy != nil {
		if p, err := t.proxy(req); p != nil || err != nil {
			return false
		}
	}
	return true
}

// hasCTL reports whether s holds a control byte (CR and LF among them),
// which must never reach the request line.
func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// pool returns the pool of host, made on first use.
func (t *Transport) pool(host string) *pool {
	if p := t.last.Load(); p != nil && p.host == host {
		return p
	}
	t.mu.RLock()
	p := t.pools[host]
	t.mu.RUnlock()
	if p == nil {
		t.mu.Lock()
		if p = t.pools[host]; p == nil {
			p = &pool{t: t, host: host, addr: dialAddr(host)}
			t.pools[host] = p
		}
		t.mu.Unlock()
	}
	t.last.Store(p)
	return p
}

// dialAddr is host with port 80 when it names none.
func dialAddr(host string) string {
	h, port, err := net.SplitHostPort(host)
	switch {
	case err == nil && port != "":
		return host
	case err == nil: // "host:", an empty port, is port 80 as in net/http
		return net.JoinHostPort(h, "80")
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "80")
}

// pool holds the idle connections to one host:port, the most recently
// used on top.
type pool struct {
	t    *Transport
	host string // as in the URL
	addr string // what is dialled

	mu   sync.Mutex
	idle []*conn
}

// get returns an idle connection, else a new one, its deadline l's (none
// for a nil l). With peek, an idle one is first checked for a close by the
// server or bytes it sent since its last answer (alive); without, the
// caller checks (writeWait). A dial is bounded by l too.
func (p *pool) get(ctx context.Context, l *Limit, peek bool) (*conn, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if c.limit(l) && c.usable(peek) {
			return c, nil
		}
		c.nc.Close()
	}
	dctx := ctx
	if l != nil {
		var cancel context.CancelFunc
		dctx, cancel = context.WithDeadlineCause(ctx, l.Deadline, l.err())
		defer cancel()
	}
	nc, err := p.t.dial(dctx, "tcp", p.addr)
	if err != nil {
		if dctx.Err() != nil && ctx.Err() == nil {
			return nil, context.Cause(dctx)
		}
		return nil, err
	}
	c := newConn(p, nc)
	if !c.limit(l) {
		nc.Close()
		return nil, errors.New("h1: setting the connection's deadline failed")
	}
	return c, nil
}

// put pools c, or closes it when the pool is full.
func (p *pool) put(c *conn) {
	c.idleAt, c.reused = time.Now(), true
	p.mu.Lock()
	if len(p.idle) < p.t.maxIdle {
		p.idle = append(p.idle, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	c.nc.Close()
}

func newConn(p *pool, nc net.Conn) *conn {
	c := &conn{p: p, nc: nc, br: bufio.NewReaderSize(nc, 4<<10), maxIdle: MaxIdleAge}
	c.interrupt = c.expire
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.raw = rc
		}
	}
	if c.raw != nil {
		c.peekFn, c.sendFn = c.peek, c.send
	}
	return c
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// validHost reports whether h can go in a Host header as it is.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if b := h[i]; b <= ' ' || b >= 0x7f || b == '/' || b == '?' || b == '#' || b == '@' {
			return false
		}
	}
	return true
}

// validToken reports whether s is a non-empty RFC 9110 token.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isToken[s[i]] {
			return false
		}
	}
	return true
}

var isToken = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

var _ io.Closer = (*body)(nil)
