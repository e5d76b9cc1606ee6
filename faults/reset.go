package faults

import "net/http"

// Reset fails the attempt before a byte of the request is written: the
// server never sees it (outcome "fail"), and a retry must process it once.
type Reset struct{}

// Kind returns KindReset.
func (Reset) Kind() string { return KindReset }

// Inject closes req's body and returns an error wrapping ErrReset; next is
// never called. It always bites (Answers.Bit): the attempt fails before
// the write.
func (Reset) Inject(_ http.RoundTripper, req *http.Request) (*http.Response, error) {
	closeBody(req)
	if req != nil {
		bite(req.Context())
	}
	return nil, &injectedError{
		kind:     KindReset,
		msg:      "connection reset before the request was written",
		sentinel: ErrReset,
	}
}
