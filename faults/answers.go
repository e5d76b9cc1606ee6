package faults

import (
	"context"
	"sync"
	"time"
)

// Answer is an answer a fault received besides the one it returns: another
// copy of a duplicated send, or the answer drop_ack hid from the client.
type Answer struct {
	// Copy numbers the copy of a duplicated send: the copy whose answer
	// (or error) the fault returned is copy 1, the others are numbered
	// from 2 in the order they were sent. 0 for the answer of a single
	// send.
	Copy int
	// Hidden is true when the client never saw the answer (drop_ack).
	Hidden bool
	// Status is the HTTP status, 0 when no response arrived.
	Status int
	// Body is what was read of the answer's body, bounded by
	// Transport.MaxBody; nil when no response arrived.
	Body *Body
	// Err is the transport error (Status is 0) or the error that broke
	// off the body (Status is set); nil for a whole answer. Sent tells
	// whether a transport error may have reached the server.
	Err error
	// End is when the answer (or error) arrived.
	End time.Time
}

// Answers collects the Answers of the faults applied to the requests whose
// context carries it (WithAnswers). Like net/http/httptrace, it gives a
// RoundTripper's caller what the RoundTripper saw without changing the
// http.RoundTripper contract: the fault still returns one response or one
// error. Every Answer of a request is added before its RoundTrip returns.
// It is safe for concurrent use; the zero value is ready.
type Answers struct {
	mu   sync.Mutex
	list []Answer
}

// Take returns the answers collected so far and forgets them.
func (a *Answers) Take() []Answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.list
	a.list = nil
	return l
}

func (a *Answers) add(l ...Answer) {
	a.mu.Lock()
	a.list = append(a.list, l...)
	a.mu.Unlock()
}

type answersKey struct{}

// WithAnswers returns a context that makes the faults applied to a request
// carrying it add the answers they received besides the one they return
// to a.
func WithAnswers(ctx context.Context, a *Answers) context.Context {
	return context.WithValue(ctx, answersKey{}, a)
}

// record adds l to the Answers carried by ctx, if any.
func record(ctx context.Context, l ...Answer) {
	if len(l) == 0 {
		return
	}
	if a, _ := ctx.Value(answersKey{}).(*Answers); a != nil {
		a.add(l...)
	}
}
