package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"
)

// Proxy is an HTTP reverse proxy that injects the faults of a Plan into the
// traffic of clients that are not idemcheck. It is an httputil.ReverseProxy
// over Transport; the n-th request it receives is op n, attempt 1.
//
// What the client sees, by fault:
//   - drop_ack: the upstream answers in full, then the client's connection is
//     closed without a response.
//   - timeout: the upstream request is abandoned after the deadline and the
//     client gets 504 Gateway Timeout.
//   - duplicate: the upstream gets the copies, the client the first answer.
//   - reset: the upstream never sees the request; the client's connection is
//     closed without a response.
//   - delay: the request is forwarded after the wait.
//
// Other upstream failures answer 502 Bad Gateway; an upstream that does
// not answer within Timeout, 504 Gateway Timeout (or, once the answer has
// begun, a connection cut off). Errors are answered as
// application/problem+json and never logged.
type Proxy struct {
	// Base carries requests upstream; nil means http.DefaultTransport. Set
	// it before serving.
	Base http.RoundTripper
	// Timeout bounds each exchange with the upstream, from the request to
	// the end of the answer's body; 0 means DefaultProxyTimeout. A silent
	// upstream never holds a client, or a connection, forever.
	Timeout time.Duration

	plan *Plan
	n    atomic.Int64
	rp   *httputil.ReverseProxy
}

// NewProxy returns a proxy to target whose faults come from plan (nil: no
// faults).
func NewProxy(target *url.URL, plan *Plan) *Proxy {
	p := &Proxy{plan: plan}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		Transport:    proxyTransport{p},
		ErrorHandler: p.fail,
	}
	return p
}

// DefaultProxyTimeout bounds an upstream exchange when Proxy.Timeout is 0.
const DefaultProxyTimeout = 30 * time.Second

// upstreamTimeout is the cause of an exchange's context when the proxy's
// timeout ends it.
type upstreamTimeout struct{ d time.Duration }

func (e *upstreamTimeout) Error() string {
	return fmt.Sprintf("the upstream did not answer within %v", e.d)
}

func (e *upstreamTimeout) Unwrap() error { return context.DeadlineExceeded }

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := int(p.n.Add(1))
	d := p.Timeout
	if d <= 0 {
		d = DefaultProxyTimeout
	}
	ctx, cancel := context.WithTimeoutCause(r.Context(), d, &upstreamTimeout{d})
	defer cancel()
	if f := p.plan.Pick(op, 1); f != nil {
		ctx = WithFault(ctx, f)
	}
	p.rp.ServeHTTP(w, r.WithContext(ctx))
}

// Requests returns how many requests the proxy has received.
func (p *Proxy) Requests() int64 { return p.n.Load() }

// proxyTransport reads Proxy.Base at request time.
type proxyTransport struct{ p *Proxy }

func (t proxyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return (&Transport{Base: t.p.Base}).RoundTrip(req)
}

// fail answers a request whose upstream exchange failed, turning injected
// failures into what a client of a real network would see.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrDroppedAck), errors.Is(err, ErrReset):
		// Close the client's connection without a response. The server
		// recognises this panic and neither logs it nor answers.
		panic(http.ErrAbortHandler)
	case errors.Is(err, ErrTimeout):
		problem(w, http.StatusGatewayTimeout, err)
	case isUpstreamTimeout(r.Context()):
		problem(w, http.StatusGatewayTimeout, context.Cause(r.Context()))
	case r.Context().Err() != nil:
		// The client went away; nobody is left to answer.
	default:
		problem(w, http.StatusBadGateway, err)
	}
}

// isUpstreamTimeout reports whether ctx ended by the proxy's timeout (not
// because the client went away).
func isUpstreamTimeout(ctx context.Context) bool {
	var ut *upstreamTimeout
	return ctx.Err() != nil && errors.As(context.Cause(ctx), &ut)
}

// problem writes an RFC 9457 problem document.
func problem(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":   "about:blank",
		"title":  http.StatusText(status),
		"status": status,
		"detail": fmt.Sprintf("idemcheck proxy: %v", err),
	})
}
