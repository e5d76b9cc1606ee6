package runner

import (
	"context"
	"time"

	"github.com/idemcheck/idemcheck/internal/h1"
)

// Together makes several requests arrive at the server at once, as
// closely as the client can (an audit's concurrent copies): over the
// runner's HTTP/1.1 client each request sent with With's context is
// written but its last byte and held; Release writes every held last
// byte in one loop, so that the requests complete at the server within
// microseconds of each other (last-byte synchronisation). A request that
// cannot be held (https, a streamed body, a fault on it, another
// transport) passes unheld, as it would be sent without Together.
//
// Each request goes out with Client.Send in its own goroutine; one that
// will not be sent at all must say so with NotSent, and Release must be
// called once every request was started, so that none waits for ever.
type Together struct {
	g *h1.Gate
}

// Together returns a Together for n requests; over a transport that
// cannot hold a request it holds none.
func (c *Client) Together(n int) *Together {
	if !c.limits {
		return &Together{}
	}
	return &Together{g: h1.NewGate(n)}
}

// With returns ctx sending a request as one of t's.
func (t *Together) With(ctx context.Context) context.Context {
	if t.g == nil {
		return ctx
	}
	return h1.WithGate(ctx, t.g)
}

// NotSent tells the Together a context from With carries, if any, that
// its request will not be sent.
func NotSent(ctx context.Context) { h1.Unheld(ctx) }

// Release waits until every request of t is held or passed (or ctx ends),
// then lets them all go. It returns how many were held and the time over
// which their last bytes were written: held == n means every request
// arrived within spread of the others.
func (t *Together) Release(ctx context.Context) (held int, spread time.Duration) {
	if t.g == nil {
		return 0, 0
	}
	select {
	case <-t.g.Ready():
	case <-ctx.Done():
	}
	return t.g.Open()
}
