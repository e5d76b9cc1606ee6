package h1

import (
	"errors"
	"fmt"
)

// unsentError is a failure that certainly happened before a byte of the
// request reached the connection: the server never saw the request. Its
// message is the wrapped error's.
type unsentError struct{ err error }

func (e *unsentError) Error() string { return e.err.Error() }

func (e *unsentError) Unwrap() error { return e.err }

// Unsent reports true: the request was not sent. A classifier can find it
// with errors.As and an interface{ Unsent() bool } target, without
// importing h1.
func (e *unsentError) Unsent() bool { return true }

// Unsent reports whether err, returned by Transport.RoundTrip, certainly
// happened before a byte of the request was written: a dial that failed,
// a context that was done before the write, a write that wrote nothing.
// Any other error may have reached the server.
func Unsent(err error) bool {
	var u *unsentError
	return errors.As(err, &u)
}

func unsent(err error) error { return &unsentError{err} }

// ErrBodyClosed is returned by a read on a response body after its Close.
var ErrBodyClosed = errors.New("h1: read on closed response body")

// protocolError is an answer that does not parse as HTTP/1.x. Its
// message says "malformed HTTP", as net/http's do (trial tells a target
// that answers in another protocol by it).
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "h1: malformed HTTP response: " + e.msg }

func malformed(format string, args ...any) error {
	return &protocolError{fmt.Sprintf(format, args...)}
}

// errStale is writeWait's error for a reused connection found closed by
// the server, or holding bytes no request asked for: nothing was written,
// and the request goes on another connection.
var errStale = errors.New("h1: stale connection")
