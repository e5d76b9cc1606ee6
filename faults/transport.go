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
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if f := FromContext(req.Context()); f != nil {
		return f.Inject(base, req)
	}
	return base.RoundTrip(req)
}
