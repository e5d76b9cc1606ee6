package h1

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// A Gate makes several requests complete at the server at once (last-byte
// synchronisation): each request sent with it (WithGate) is written but
// its last byte, and held there. Once every one of the Gate's requests is
// held, or will not be (it went to the fallback, was streamed, or failed
// before it was written), Ready is closed; Open then writes every held
// last byte, one after the other in one loop, and lets each request read
// its answer. The requests so arrive within microseconds of each other,
// where requests merely started together arrive as their goroutines,
// connections and writes happen to be scheduled.
//
//	copy 1: ----- all but the last byte ------|hold|-x--- answer
//	copy 2: --- all but the last byte ---|hold.....|-x--- answer
//	                                          Open: x x (one loop)
//
// The last byte of a request with a body is the body's: a server that
// reads the body before it acts (nearly every handler) acts on all the
// copies at once; one that acts on the headers alone is not held back. A
// request without a body ends with its headers' last byte, which every
// server waits for. Only requests this Transport writes in one message
// (Holds) are held; a request streamed or sent by the fallback (https)
// passes the Gate unheld.
//
// A held request whose context ends before Open returns its context's
// error, the request left incomplete at the server (counted as sent: its
// bytes reached the connection). Open must be called once the Gate's
// requests were sent, Ready or not, so that none waits for ever.
type Gate struct {
	n     int
	mu    sync.Mutex
	come  int // requests held or passed
	held  []*held
	open  bool
	ready chan struct{} // closed when every request came
	done  chan struct{} // closed by Open, once every last byte was written
}

// held is one request held by a Gate.
type held struct {
	c    *conn
	last [1]byte // the request's last byte
	n    int     // bytes of last written by Open
	err  error   // Open's write error
}

// NewGate returns a Gate for n requests.
func NewGate(n int) *Gate {
	return &Gate{n: n, ready: make(chan struct{}), done: make(chan struct{})}
}

type gateKey struct{}

// WithGate returns ctx making a Transport hold the last byte of the
// request sent with it at g.
func WithGate(ctx context.Context, g *Gate) context.Context {
	return context.WithValue(ctx, gateKey{}, g)
}

// gateOf is the Gate ctx carries, nil for none.
func gateOf(ctx context.Context) *Gate {
	g, _ := ctx.Value(gateKey{}).(*Gate)
	return g
}

// Holds reports whether t writes req itself in one message, so that a
// Gate can hold its last byte: a plain http:// request with no body or a
// body of known length up to 64 KiB. A request it does not hold is sent
// all the same, passing the Gate.
func (t *Transport) Holds(req *http.Request) bool {
	if !t.handles(req) {
		return false
	}
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	return req.ContentLength > 0 && req.ContentLength <= maxInline
}

// Ready is closed once every request of g is held or passed.
func (g *Gate) Ready() <-chan struct{} { return g.ready }

// arrive counts one more request at the Gate: held when h is not nil, else
// passed. It reports false, holding nothing, when the Gate is open
// already: h's last byte is then its own to write.
func (g *Gate) arrive(h *held) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		return false
	}
	if h != nil {
		g.held = append(g.held, h)
	}
	g.come++
	if g.come == g.n {
		close(g.ready)
	}
	return true
}

// pass counts a request that will not be held; a nil Gate ignores it.
func (g *Gate) pass() { g.arrive(nil) }

// Unheld tells the Gate ctx carries, if any, that the request meant to be
// sent with ctx will not reach a Transport (it failed before, or goes
// another way), so that the Gate does not wait for it. It returns ctx
// without the Gate.
func Unheld(ctx context.Context) context.Context {
	if g := gateOf(ctx); g != nil {
		g.pass()
		return WithGate(ctx, nil)
	}
	return ctx
}

// Open writes the last byte of every held request, one after the other in
// one loop, and lets them read their answers. It returns how many were
// held and the time from the first write's start to the last one's end.
// A request that comes after Open is not held. Calling Open again does
// nothing.
func (g *Gate) Open() (n int, spread time.Duration) {
	g.mu.Lock()
	if g.open {
		g.mu.Unlock()
		return 0, 0
	}
	g.open = true
	hs := g.held
	g.mu.Unlock()
	var first time.Time
	for i, h := range hs {
		if i == 0 {
			first = time.Now()
		}
		h.n, h.err = h.c.nc.Write(h.last[:])
	}
	if len(hs) > 0 {
		spread = time.Since(first)
	}
	close(g.done)
	return len(hs), spread
}

// writeHeld writes msg, a whole request, on c but its last byte, holds
// the request at g until Open writes that byte, and returns how many
// bytes reached the connection. When g is open already, the last byte is
// written at once; when ctx ends first, the request stays incomplete and
// ctx's error is returned.
func (c *conn) writeHeld(ctx context.Context, msg []byte, g *Gate) (int, error) {
	n, err := c.nc.Write(msg[:len(msg)-1])
	if err != nil {
		g.pass()
		return n, err
	}
	h := &held{c: c, last: [1]byte{msg[len(msg)-1]}}
	if !g.arrive(h) {
		m, err := c.nc.Write(h.last[:])
		return n + m, err
	}
	select {
	case <-g.done:
		return n + h.n, h.err
	case <-ctx.Done():
		return n, context.Cause(ctx)
	}
}
