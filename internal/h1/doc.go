// Package h1 is a specialised HTTP/1.1 client for the runner's hot path:
// plain http:// requests on kept-alive connections, each request written in
// one write and each answer parsed straight from the connection's buffer,
// with no goroutine per connection.
//
//	RoundTrip(req)
//	  |-- https, a proxy, Expect, Upgrade, userinfo, odd URL ---> fallback (net/http)
//	  v
//	pool[host:port] --idle conn (nothing unread)-----------------+
//	  |                                                           |
//	  +--none: dial (unsent on failure)                           |
//	  v                                                           v
//	the conn's deadline: the request's Limit, if any (WithLimit)
//	watch the context: the Limit's watch, else context.AfterFunc
//	  v
//	in one RawConn.Read: a peek (a reused conn the server closed, or
//	one holding stray bytes, is dropped and another taken, nothing sent),
//	one write (request line, headers, body), a wait for the answer
//	  v
//	read status line and headers (1xx skipped) --> Body: Content-Length,
//	chunked or to EOF --> at its end the conn goes back to the pool
//
// A body longer than 64 KiB, or of unknown length, is streamed after the
// headers, on a connection peeked when taken from the pool.
//
// A Limit bounds a request in time without a timer per request: the
// runner keeps one per worker and sets its deadline at each send.
//
// A Gate (WithGate) synchronises several requests on their last byte: each
// is written but its last byte and held, then Open writes all the last
// bytes in one loop, so that the requests complete at the server within
// microseconds of each other (the duplicate fault's copies). Holds says
// which requests it can hold; the others pass the Gate unheld.
//
// It never sends a request twice: an error after the first byte was
// written is returned as it is. Errors that certainly happened before a
// byte was written (a dial failure, a context already done, a write that
// wrote nothing) answer true to Unsent, and implement Unsent() bool so
// that a classifier need not import this package.
//
// What it does not do, by design: HTTP/2, TLS, proxies, compression
// (it sends no Accept-Encoding and never decompresses), response trailers
// (read and dropped), 100-continue. Those requests go to the fallback
// RoundTripper unchanged. A raw query with a control byte goes there too,
// which refuses it rather than split the request line.
//
// Limits, unlike net/http: a response Body must be read and closed by one
// goroutine (Close does not abort a Read blocked in another); the whole
// request is written before the answer is read, so a server that answers
// early (a 413) without reading a large body is seen as a failed write
// (the attempt indeterminate, never a false success); bytes a server sends
// after its answer are caught by the peek before the connection's reuse,
// not while it sits idle, so bytes that arrive in the instant between the
// peek and the next request's write are read as its answer, a window
// net/http's background reader narrows but does not close either.
package h1
