package faults

import (
	"fmt"
	"net/http"
	"time"
)

// DropAck lets the request reach the server, reads the answer and discards
// it: the client sees a connection error although the server did the work
// (outcome "info"). A retry must then get the first answer.
type DropAck struct {
	maxBody int // bytes of the hidden answer's body kept; 0: DefaultMaxBody
}

func (d DropAck) withMaxBody(n int) Fault { d.maxBody = n; return d }

// Kind returns KindDropAck.
func (DropAck) Kind() string { return KindDropAck }

// Inject sends req, reads and closes the response, and returns an error
// wrapping ErrDroppedAck. A real failure of next is returned unchanged.
//
// The hidden answer is added, with Hidden set, to the Answers the request's
// context carries (WithAnswers), its body bounded like any other (at most
// Transport.MaxBody bytes kept). Reading it stops at the body's end, when
// the request's context ends, or after 64 × MaxBody bytes (the Answer's
// Err then wraps ErrReadLimit): a body that never ends cannot hold the
// attempt.
func (d DropAck) Inject(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	keep := d.maxBody
	if keep <= 0 {
		keep = DefaultMaxBody
	}
	b, rerr := readBody(req.Context(), resp.Body, keep, dropAckReadFactor*int64(keep))
	record(req.Context(), Answer{Hidden: true, Status: resp.StatusCode, Body: b, Err: rerr, End: time.Now()})
	bite(req.Context())
	return nil, &injectedError{
		kind:     KindDropAck,
		msg:      fmt.Sprintf("response discarded after the server answered %d", resp.StatusCode),
		sentinel: ErrDroppedAck,
	}
}
