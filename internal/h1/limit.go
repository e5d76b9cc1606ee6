package h1

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Limit bounds a request and its answer's body in time: sent through a
// Transport with a context that carries it (WithLimit), a request still
// running at Deadline fails with Cause (os.ErrDeadlineExceeded when nil),
// and so does a read of its body.
//
// A Transport applies it as its connection's deadline: no timer, channel
// or goroutine per request, which a context.WithTimeout costs. One Limit
// can serve every request of a caller that sends one request at a time
// (set Deadline before each); it must not change while a request that
// carries it, or its body, is in use. A request the Transport hands to
// its fallback gets a context.WithDeadlineCause of its own.
type Limit struct {
	Deadline time.Time
	Cause    error

	mu    sync.Mutex
	done  <-chan struct{} // the Done of the context WithLimit watches
	ended bool            // that context ended
	conns []*conn         // the connections of the requests in flight with l
}

type limitKey struct{}

// err is what a request that outlived l fails with: its Cause, else
// os.ErrDeadlineExceeded.
func (l *Limit) err() error {
	if l.Cause != nil {
		return l.Cause
	}
	return os.ErrDeadlineExceeded
}

// WithLimit returns ctx carrying l; a zero Deadline is no limit. It also
// watches ctx, until it ends, for every request sent with it: a request
// whose context has ctx's Done (ctx itself, or a value of it) is
// interrupted when ctx ends without a watch of its own per request. Give
// each Limit to one WithLimit, on a context that ends.
func WithLimit(ctx context.Context, l *Limit) context.Context {
	if l.done = ctx.Done(); l.done != nil {
		context.AfterFunc(ctx, l.interrupt)
	}
	return context.WithValue(ctx, limitKey{}, l)
}

// add puts c under l's watch; false when l's context already ended.
func (l *Limit) add(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return false
	}
	l.conns = append(l.conns, c)
	return true
}

// remove takes c from l's watch; false when l's context ended while c was
// under it (its deadline is then in the past).
func (l *Limit) remove(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, x := range l.conns {
		if x == c {
			last := len(l.conns) - 1
			l.conns[i], l.conns[last] = l.conns[last], nil
			l.conns = l.conns[:last]
			break
		}
	}
	return !l.ended
}

// interrupt fails the I/O of every request in flight with l: its context
// ended.
func (l *Limit) interrupt() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = true
	for _, c := range l.conns {
		c.expire()
	}
}

// limitOf returns the Limit ctx carries, nil for none.
func limitOf(ctx context.Context) *Limit {
	l, _ := ctx.Value(limitKey{}).(*Limit)
	if l == nil || l.Deadline.IsZero() {
		return nil
	}
	return l
}

// cause is what ended a request whose I/O failed with err: its context's
// cause when the context is done, its Limit's when the connection's
// deadline passed, else err.
func cause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if l := limitOf(ctx); l != nil && !time.Now().Before(l.Deadline) {
			return l.err()
		}
	}
	return err
}

// limit sets c's deadline for a request carrying l (none when l is nil).
// It reports false when the deadline could not be set: c is then unusable.
func (c *conn) limit(l *Limit) bool {
	switch {
	case l != nil:
		c.limited = true
		return c.nc.SetDeadline(l.Deadline) == nil
	case c.limited:
		c.limited = false
		return c.nc.SetDeadline(time.Time{}) == nil
	}
	return true
}

// viaFallback sends req through the fallback, bounded by its Limit with a
// context of its own.
func (t *Transport) viaFallback(req *http.Request) (*http.Response, error) {
	parent := req.Context()
	l := limitOf(parent)
	if l == nil {
		return t.fallback.RoundTrip(req)
	}
	ctx, cancel := context.WithDeadlineCause(parent, l.Deadline, l.err())
	resp, err := t.fallback.RoundTrip(req.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil && parent.Err() == nil {
			err = context.Cause(ctx)
		}
		cancel()
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, ctx: ctx, parent: parent, cancel: cancel}
	return resp, nil
}

// limitedBody is a fallback answer's body: its reads fail with the
// Limit's cause once the deadline passed, and its Close releases the
// deadline's timer.
type limitedBody struct {
	rc     io.ReadCloser
	ctx    context.Context // parent, bounded by the Limit
	parent context.Context
	cancel context.CancelFunc
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() != nil && b.parent.Err() == nil {
		err = context.Cause(b.ctx)
	}
	return n, err
}

func (b *limitedBody) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}

type headersKey struct{}

// WithHeaders returns ctx asking a Transport to keep only the answer
// headers named in keep (canonical names, e.g. "Retry-After") in the
// responses to requests sent with it: a caller that reads one or two
// headers is spared a map of all of them per answer. The body, status
// and framing are as ever; the Transport reads every header it needs
// itself.
func WithHeaders(ctx context.Context, keep ...string) context.Context {
	m := make(map[string]bool, len(keep))
	for _, k := range keep {
		m[k] = true
	}
	return context.WithValue(ctx, headersKey{}, m)
}

// headersOf is the set WithHeaders put in ctx, nil for every header.
func headersOf(ctx context.Context) map[string]bool {
	m, _ := ctx.Value(headersKey{}).(map[string]bool)
	return m
}
