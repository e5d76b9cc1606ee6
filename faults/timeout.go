package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Timeout gives the attempt a client deadline: after After the client gives
// up and closes its connection while the server may still be working, so a
// retry overlaps the original (outcome "info").
type Timeout struct {
	After time.Duration
}

// Kind returns KindTimeout.
func (Timeout) Kind() string { return KindTimeout }

// Inject sends a clone of req whose context has the deadline After. When the
// deadline expires first it returns an error wrapping ErrTimeout. When the
// answer comes in time its body is read whole inside the deadline and the
// response is returned with that buffered body. If the request's own context
// ends first, its error is returned as is: that is not an injected timeout.
func (t Timeout) Inject(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	parent := req.Context()
	ctx, cancel := context.WithTimeout(parent, t.After)
	defer cancel()
	resp, err := next.RoundTrip(req.Clone(ctx))
	if err != nil {
		return nil, t.classify(parent, ctx, err, "no answer")
	}
	if err := bufferBody(resp); err != nil {
		return nil, t.classify(parent, ctx, err, fmt.Sprintf("the server answered %d but the body did not arrive", resp.StatusCode))
	}
	return resp, nil
}

// bufferBody reads resp's body whole and closes it, then puts the bytes
// read back in its place, with ContentLength set to their length.
func bufferBody(resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return nil
}

// classify turns a failure caused by the injected deadline into an error
// wrapping ErrTimeout, and leaves every other failure as it is.
func (t Timeout) classify(parent, ctx context.Context, err error, what string) error {
	if parent.Err() == nil && ctx.Err() != nil {
		return &injectedError{
			kind:     KindTimeout,
			msg:      fmt.Sprintf("%s within %v; the client gave up, the server may still be working", what, t.After),
			sentinel: ErrTimeout,
		}
	}
	return err
}
