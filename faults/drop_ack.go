package faults

import (
	"fmt"
	"net/http"
)

// DropAck lets the request reach the server, reads the whole answer and
// discards it: the client sees a connection error although the server did
// the work (outcome "info"). A retry must then get the first answer.
type DropAck struct{}

// Kind returns KindDropAck.
func (DropAck) Kind() string { return KindDropAck }

// Inject sends req, reads and closes the response, and returns an error
// wrapping ErrDroppedAck. A real failure of next is returned unchanged.
func (DropAck) Inject(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	drainClose(resp)
	return nil, &injectedError{
		kind:     KindDropAck,
		msg:      fmt.Sprintf("response discarded after the server answered %d", resp.StatusCode),
		sentinel: ErrDroppedAck,
	}
}
