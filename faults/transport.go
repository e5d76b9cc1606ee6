package faults

import (
	"context"
	"net/http"
)

type faultKey struct{}

// WithFault returns a context that makes Transport apply f to the request
// that carries it. A nil f means no fault.
func WithFault(ctx context.Context, f Fault) context.Context {
	return context.WithValue(ctx, faultKey{}, f)
}

// FromContext returns the fault WithFault put in ctx, or nil.
func FromContext(ctx context.Context) Fault {
	f, _ := ctx.Value(faultKey{}).(Fault)
	return f
}

// Transport is an http.RoundTripper that applies the fault carried by the
// request's context (WithFault); without one it calls Base directly.
//
// The faults that read an answer ahead of the client (timeout, duplicate,
// drop_ack) keep at most MaxBody bytes of each answer body: the rest is
// read, counted and hashed, then dropped (see Body), until the body ends
// or the request's context does. drop_ack also stops reading the answer it
// hides after 64 × MaxBody bytes, so a body that never ends cannot hold it
// when the request has no deadline. The answers a fault receives besides
// the one it returns reach the caller through WithAnswers.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// MaxBody is how many bytes of an answer body a fault keeps; 0 means
	// DefaultMaxBody. The runner sets its own Options.MaxBody here, so
	// both keep the same prefix of a body.
	MaxBody int
}

// bodyCapped is a fault that reads answer bodies, given the cap it keeps.
type bodyCapped interface {
	withMaxBody(n int) Fault
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if f := FromContext(req.Context()); f != nil {
		if c, ok := f.(bodyCapped); ok && t.MaxBody > 0 {
			f = c.withMaxBody(t.MaxBody)
		}
		return f.Inject(base, req)
	}
	return base.RoundTrip(req)
}
