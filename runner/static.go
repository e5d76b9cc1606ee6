package runner

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/idemcheck/idemcheck/scenarios"
)

// static is the operation's request when nothing in it is templated: the
// URL is resolved once and the header values are shared, read-only, by
// every request, so an attempt costs a handful of allocations instead of a
// template render, two URL parses and a header map filled value by value.
type static struct {
	method string
	header http.Header // canonical names; never modified once built
	body   []byte      // nil when the request has none
	// proto is the request every attempt's is a shallow copy of
	// (Request.WithContext): method, URL, protocol and host set once, so
	// an attempt does not parse a URL or validate a method. Its Header
	// and Body are nil; it is never sent nor modified.
	proto *http.Request
}

// newStatic returns the static form of op, or nil when any part of it is a
// template.
func newStatic(base *url.URL, op scenarios.Request) (*static, error) {
	if strings.Contains(op.Path, "{{") || strings.Contains(op.Body, "{{") {
		return nil, nil
	}
	for _, v := range op.Headers {
		if strings.Contains(v, "{{") {
			return nil, nil
		}
	}
	raw, err := scenarios.Join(base, op.Path)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	s := &static{method: strings.ToUpper(op.Method), header: http.Header{}}
	if s.method == "" {
		s.method = http.MethodPost
	}
	for name, v := range op.Headers {
		s.header[http.CanonicalHeaderKey(name)] = []string{v}
	}
	if op.Body != "" {
		s.body = []byte(op.Body)
		if _, ok := s.header["Content-Type"]; !ok {
			s.header["Content-Type"] = []string{"application/json"}
		}
	}
	// NewRequest validates the method as it does for a templated request.
	if s.proto, err = http.NewRequestWithContext(context.Background(), s.method, "", nil); err != nil {
		return nil, err
	}
	s.proto.URL, s.proto.Host, s.proto.Header = u, u.Host, nil
	return s, nil
}

// request builds a request for ctx with body (the static body, or the op's
// edited copy of it) and the key header set to keyVal
// (nil for none). The request must not be modified: its header values are
// shared.
func (s *static) request(ctx context.Context, body []byte, keyHeader string, keyVal []string) (*http.Request, error) {
	if ctx == nil {
		return nil, errors.New("net/http: nil Context")
	}
	req := s.proto.WithContext(ctx)
	s.fill(req, body, keyHeader, keyVal)
	return req, nil
}

// fill sets req's header and body, as request does; req is a copy of
// s.proto.
func (s *static) fill(req *http.Request, body []byte, keyHeader string, keyVal []string) {
	// Room for the key and an Authorization header, so that neither grows
	// the map.
	req.Header = make(http.Header, len(s.header)+2)
	for k, v := range s.header {
		req.Header[k] = v
	}
	if keyVal != nil {
		req.Header[keyHeader] = keyVal
	}
	if body != nil {
		// io.NopCloser over a *bytes.Reader is a body net/http knows to be
		// in memory, so it writes the headers and the body in one go
		// rather than flushing the headers in a write of their own.
		req.Body = io.NopCloser(bytes.NewReader(body))
		// No GetBody: net/http would then silently resend a POST that
		// carries an Idempotency-Key header on a broken keep-alive
		// connection, a send the history would never see. Retries are
		// the runner's alone; the duplicate fault buffers the body itself.
		req.ContentLength = int64(len(body))
		if len(body) == 0 {
			req.Body = http.NoBody
		}
	}
}
