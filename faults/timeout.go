package faults

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Timeout gives the attempt a client deadline: after After the client gives
// up and closes its connection while the server may still be working, so a
// retry overlaps the original (outcome "info").
type Timeout struct {
	After time.Duration

	maxBody int // bytes of the answer body kept; 0: DefaultMaxBody
}

func (t Timeout) withMaxBody(n int) Fault { t.maxBody = n; return t }

// Kind returns KindTimeout.
func (Timeout) Kind() string { return KindTimeout }

// Inject sends a clone of req whose context has the deadline After. When the
// deadline expires first it returns an error wrapping ErrTimeout. When the
// answer comes in time its body is read to its end inside the deadline and
// the response is returned with a *Body in its place, holding at most
// Transport.MaxBody bytes of it. If the request's own context
// ends first, its error is returned as is: that is not an injected timeout.
//
// It bit (Answers.Bit) when the deadline fired before the whole answer
// came, on a request that may have reached the server: a deadline that
// fires before a byte is written only fails the attempt, as a reset does.
func (t Timeout) Inject(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	parent := req.Context()
	ctx, cancel := context.WithTimeout(parent, t.After)
	defer cancel()
	resp, err := next.RoundTrip(req.Clone(ctx))
	if err != nil {
		return nil, t.classify(parent, ctx, err, "no answer")
	}
	if err := bufferBody(ctx, resp, t.maxBody); err != nil {
		return nil, t.classify(parent, ctx, err, fmt.Sprintf("the server answered %d but the body did not arrive", resp.StatusCode))
	}
	return resp, nil
}

// classify turns a failure caused by the injected deadline into an error
// wrapping ErrTimeout, and leaves every other failure as it is.
func (t Timeout) classify(parent, ctx context.Context, err error, what string) error {
	if parent.Err() == nil && ctx.Err() != nil {
		if Sent(err) {
			bite(parent)
		}
		return &injectedError{
			kind:     KindTimeout,
			msg:      fmt.Sprintf("%s within %v; the client gave up, the server may still be working", what, t.After),
			sentinel: ErrTimeout,
		}
	}
	return err
}
