package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// application/problem+json.
//
// A fault that reads the answer ahead of the client (duplicate, timeout)
// keeps at most DefaultMaxBody bytes of it: an answer longer than that is
// never cut short silently, but refused with 502 and a line on Log. A
// duplicate of an upload over MaxDuplicateBody, which it would have to
// hold whole, is refused with 413 and a line on Log; nothing is sent.
type Proxy struct {
	// Base carries requests upstream; nil means http.DefaultTransport. Set
	// it before serving.
	Base http.RoundTripper
	// Timeout bounds each exchange with the upstream, from the request to
	// the end of the answer's body; 0 means DefaultProxyTimeout. A silent
	// upstream never holds a client, or a connection, forever.
	Timeout time.Duration
	// Log hears a line for each request whose fault the proxy refused
	// (an answer or an upload too long for it); nil hears nothing.
	Log io.Writer

	// RequestLog, when set, hears a JSON line for each request as it
	// ends (RequestRecord), secrets masked; nil hears nothing.
	RequestLog io.Writer
	// RedactPath masks every path segment in the request log too, for
	// paths that carry a credential.
	RedactPath bool
	// Scrub, when set, removes known secrets from what the request log
	// writes of a request (its path and key).
	Scrub func(string) string
	// KeyHeader names the request header the request log and the
	// statistics read the idempotency key from; "" means
	// Idempotency-Key.
	KeyHeader string

	plan  atomic.Pointer[planState]
	n     atomic.Int64
	rp    *httputil.ReverseProxy
	stats proxyStats
}

// planState is the plan in force and the --fault flags it was made from.
type planState struct {
	plan  *Plan
	seed  uint64
	flags []string
}

// NewProxy returns a proxy to target whose faults come from plan (nil: no
// faults).
func NewProxy(target *url.URL, plan *Plan) *Proxy {
	p := &Proxy{}
	p.plan.Store(&planState{plan: plan, flags: []string{}})
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
	f := p.plan.Load().plan.Pick(op, 1)
	if f != nil {
		ctx = WithFault(ctx, f)
	}
	sw := &statusWriter{ResponseWriter: w}
	defer p.record(r, op, f, sw, time.Now()) // a dropped ack or a reset panics past it: still recorded
	p.rp.ServeHTTP(sw, r.WithContext(ctx))
}

// Requests returns how many requests the proxy has received.
func (p *Proxy) Requests() int64 { return p.n.Load() }

// proxyTransport reads Proxy.Base at request time.
type proxyTransport struct{ p *Proxy }

func (t proxyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := (&Transport{Base: t.p.Base}).RoundTrip(req)
	if err == nil {
		if b, ok := resp.Body.(*Body); ok && b.Truncated() {
			// The fault kept the start of the answer only: a client
			// handed it would take a short answer for a whole one.
			resp.Body.Close()
			return nil, &tooLongError{size: b.Size(), kept: len(b.Kept())}
		}
	}
	return resp, err
}

// tooLongError is an answer longer than what the fault that read it
// keeps.
type tooLongError struct {
	size int64
	kept int
}

func (e *tooLongError) Error() string {
	return fmt.Sprintf("the upstream's answer (%d bytes) is longer than the %d bytes the injected fault keeps: not forwarded cut short", e.size, e.kept)
}

// logf writes a line to p.Log.
func (p *Proxy) logf(r *http.Request, format string, args ...any) {
	if p.Log != nil {
		fmt.Fprintf(p.Log, "idemcheck proxy: %s %s: %s\n", r.Method, r.URL.Path, fmt.Sprintf(format, args...))
	}
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
	case errors.As(err, new(*tooLongError)):
		p.logf(r, "%v: answered 502", err)
		problem(w, http.StatusBadGateway, err)
	case errors.Is(err, ErrDuplicateBody):
		p.logf(r, "%v: answered 413, nothing sent", err)
		problem(w, http.StatusRequestEntityTooLarge, err)
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
