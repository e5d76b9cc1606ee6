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

// Answers collects what the faults applied to the requests whose context
// carries it (WithAnswers) saw: the Answers they received besides the one
// they return, and whether they bit. Like net/http/httptrace, it gives a
// RoundTripper's caller what the RoundTripper saw without changing the
// http.RoundTripper contract: the fault still returns one response or one
// error. Everything a request's fault saw is added before its RoundTrip
// returns. It is safe for concurrent use; the zero value is ready.
type Answers struct {
	mu   sync.Mutex
	list []Answer
	bit  bool
	// released is when a delay let the request go; zero for none.
	released time.Time
	// spread and synced are a duplicate send's (see Spread).
	spread time.Duration
	synced bool
}

// Bit reports whether a fault applied to a request carrying a changed
// what happened, which a fault that is merely planned may not: a timeout
// that fired before the answer came (on a request that was sent), a
// drop_ack that dropped a real answer, duplicate copies that were in
// flight at once (a copy's request was written before another's answer
// came), a reset (it always fails before the write), a delay that
// delayed (it was not cut short).
func (a *Answers) Bit() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bit
}

// Spread is, for a duplicate send, the time between the first and the
// last copy's request being complete on the wire, and synced whether
// the copies' last bytes were held and sent in one go (last-byte
// synchronisation, over the runner's HTTP/1.1 client) rather than
// released by a barrier (net/http: https targets, or a wrapped
// transport). 0 and false for any other fault.
func (a *Answers) Spread() (spread time.Duration, synced bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.spread, a.synced
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

// answersOf is the Answers ctx carries, nil for none.
func answersOf(ctx context.Context) *Answers {
	a, _ := ctx.Value(answersKey{}).(*Answers)
	return a
}

// Released is when a delay fault let the request go after holding it
// back; zero when none did.
func (a *Answers) Released() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.released
}

// release records in the Answers ctx carries that a delay let the request
// go at t.
func release(ctx context.Context, t time.Time) {
	if a := answersOf(ctx); a != nil {
		a.mu.Lock()
		a.released = t
		a.mu.Unlock()
	}
}

// bite records in the Answers carried by ctx, if any, that the fault
// applied to its request bit.
func bite(ctx context.Context) {
	if a := answersOf(ctx); a != nil {
		a.mu.Lock()
		a.bit = true
		a.mu.Unlock()
	}
}

// spread records a duplicate send's spread in the Answers ctx carries.
func spread(ctx context.Context, d time.Duration, synced bool) {
	if a := answersOf(ctx); a != nil {
		a.mu.Lock()
		a.spread, a.synced = d, synced
		a.mu.Unlock()
	}
}

// record adds l to the Answers carried by ctx, if any.
func record(ctx context.Context, l ...Answer) {
	if len(l) == 0 {
		return
	}
	if a := answersOf(ctx); a != nil {
		a.add(l...)
	}
}
