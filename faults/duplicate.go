package faults

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/internal/h1"
)

// Duplicate sends the same attempt Copies times at once, as a double submit
// or an at-least-once queue would. The server must apply it once. Every
// copy goes to the request's URL: copies do not spread over replicas.
//
// The copies are made to arrive together. Over the runner's HTTP/1.1
// client (internal/h1, plain http://) they are sent with last-byte
// synchronisation: each copy is written but its last byte, and once every
// copy is held there, all the last bytes are written in one loop, so
// that the copies complete at the server within microseconds of each
// other (h1.Gate). Over any other transport (net/http: https targets,
// proxies, a wrapped transport) the copies are released together by a
// barrier once each is ready to send, and arrive as their goroutines and
// connections are scheduled: tens to hundreds of microseconds apart.
// Answers.Spread says which was used and how far apart the copies went.
// MaxCopies bounds a duplicate fault's copies: every copy's answer is
// read and kept (up to the body bound) until the last one ends.
const MaxCopies = 100

type Duplicate struct {
	Copies int

	maxBody int // bytes of each answer body kept; 0: DefaultMaxBody
}

func (d Duplicate) withMaxBody(n int) Fault { d.maxBody = n; return d }

// Kind returns KindDuplicate.
func (Duplicate) Kind() string { return KindDuplicate }

// copyResult is what one copy of a duplicated request got.
type copyResult struct {
	i      int            // the copy's index, in the order sent
	resp   *http.Response // set when the answer arrived whole; its body is a *Body
	status int            // the status, also when the body broke off
	body   *Body          // what was read of the body; nil without a response
	err    error
	end    time.Time

	// sent is when the copy was handed to the transport; wrote (Unix
	// ns, 0 when the transport did not say) when its request was
	// written whole; answered when its answer's headers, or its error,
	// came.
	sent     time.Time
	wrote    atomic.Int64
	answered time.Time
}

// holder is a transport that can hold back the last byte of a request
// (internal/h1's Transport).
type holder interface {
	Holds(*http.Request) bool
}

// Inject sends Copies identical clones of req concurrently and returns the
// first complete answer (headers and whole body), its body a *Body that
// keeps at most Transport.MaxBody bytes. The other answers are read the same
// way (so memory is bounded by Copies × MaxBody) and closed. It returns only
// when every copy has finished, so no goroutine outlives the call; a body
// that never ends is cut off by the request's context. If every copy fails
// it returns the first error that may have reached the server, else the
// first error. Copies below 2 count as 2.
//
// The other copies' answers and errors are added, as Answers numbered from
// 2 in the order the copies were sent, to the Answers the request's context
// carries (WithAnswers); the one returned is copy 1. It bit (Answers.Bit)
// when two copies were in flight at once: each was written before the
// other's answer came.
func (d Duplicate) Inject(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	n := max(d.Copies, 2)
	bodies, err := copyBodies(req, n)
	if err != nil {
		return nil, &unsentError{fmt.Errorf("injected duplicate: copying the request body: %w", err)}
	}
	ctx := req.Context()
	var gate *h1.Gate
	if h, ok := next.(holder); ok && h.Holds(req) {
		gate = h1.NewGate(n)
	}
	results := make([]copyResult, n)
	barrier := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		c := &results[i]
		c.i = i
		cctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { c.wrote.Store(time.Now().UnixNano()) },
		})
		if gate != nil {
			cctx = h1.WithGate(cctx, gate)
		}
		r := req.Clone(cctx)
		// The clone keeps req.GetBody as it is: nil keeps http.Transport
		// from silently resending a copy on a reused connection.
		r.Body = bodies[i]
		wg.Go(func() {
			<-barrier
			d.sendCopy(next, r, c)
		})
	}
	close(barrier)
	var spreadOf time.Duration
	synced := false
	if gate != nil {
		select {
		case <-gate.Ready():
		case <-ctx.Done():
		}
		var held int
		held, spreadOf = gate.Open()
		synced = held == n
	}
	wg.Wait()
	if !synced {
		spreadOf = writeSpread(results)
	}
	spread(ctx, spreadOf, synced)
	if overlapped(results) {
		bite(ctx)
	}
	// The winner is the first whole answer; without one, the first error
	// that may have reached the server (one such copy makes the attempt
	// indeterminate, whichever copy failed first: a dial error would call
	// it unsent and let a checker demand 0 effects), else the first error.
	order := make([]*copyResult, n)
	for i := range results {
		order[i] = &results[i]
	}
	slices.SortStableFunc(order, func(a, b *copyResult) int { return a.end.Compare(b.end) })
	win := -1
	for _, pass := range []func(*copyResult) bool{
		func(c *copyResult) bool { return c.err == nil },
		func(c *copyResult) bool { return Sent(c.err) },
		func(*copyResult) bool { return true },
	} {
		for _, c := range order {
			if pass(c) {
				win = c.i
				break
			}
		}
		if win >= 0 {
			break
		}
	}
	others := make([]Answer, 0, n-1)
	for i := range results {
		c := &results[i]
		if c.i == win {
			continue
		}
		others = append(others, Answer{Copy: len(others) + 2, Status: c.status, Body: c.body, Err: c.err, End: c.end})
	}
	record(ctx, others...)
	if w := &results[win]; w.err != nil {
		return nil, w.err
	}
	return results[win].resp, nil
}

// sendCopy sends one copy and reads its whole answer into c (bounded by
// maxBody, until the request's context ends), so the connection is
// drained and closed whether or not the answer wins.
func (d Duplicate) sendCopy(next http.RoundTripper, r *http.Request, c *copyResult) {
	c.sent = time.Now()
	resp, err := next.RoundTrip(r)
	c.answered = time.Now()
	if err != nil {
		c.err, c.end = err, c.answered
		return
	}
	c.status = resp.StatusCode
	c.body, c.err = readBody(r.Context(), resp.Body, d.maxBody, 0)
	c.end = time.Now()
	if c.err != nil {
		return
	}
	setBody(resp, c.body)
	c.resp = resp
}

// written is when c's request was complete on the wire, as far as the
// transport said: when it wrote it (net/http, a held request), else when
// it was handed to the transport.
func (c *copyResult) written() time.Time {
	if ns := c.wrote.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return c.sent
}

// overlapped reports whether two copies that may have reached the server
// were in flight at once: each was written before the other's answer
// came. Copies that the server answered one after the other (a fast
// server, copies sent far apart) did not duplicate anything in flight.
func overlapped(results []copyResult) bool {
	for i := range results {
		a := &results[i]
		if !Sent(a.err) {
			continue
		}
		for j := i + 1; j < len(results); j++ {
			b := &results[j]
			if !Sent(b.err) {
				continue
			}
			wa, wb := a.written(), b.written()
			last := wa
			if wb.After(last) {
				last = wb
			}
			first := a.answered
			if b.answered.Before(first) {
				first = b.answered
			}
			if last.Before(first) {
				return true
			}
		}
	}
	return false
}

// writeSpread is the time between the first and the last copy's request
// being written, of the copies that may have reached the server.
func writeSpread(results []copyResult) time.Duration {
	var lo, hi time.Time
	for i := range results {
		c := &results[i]
		if !Sent(c.err) {
			continue
		}
		w := c.written()
		if lo.IsZero() || w.Before(lo) {
			lo = w
		}
		if w.After(hi) {
			hi = w
		}
	}
	return hi.Sub(lo)
}

// MaxDuplicateBody bounds the request body a duplicate fault buffers to
// send it again, when the request cannot be read twice (a proxied
// client's upload): a larger one is refused (ErrDuplicateBody) rather
// than held whole in memory.
const MaxDuplicateBody = 16 << 20

// ErrDuplicateBody is wrapped by the error of a duplicate whose request
// body is over MaxDuplicateBody: no copy was sent.
var ErrDuplicateBody = fmt.Errorf("request body over the %d MiB a duplicate fault buffers", MaxDuplicateBody>>20)

// copyBodies returns n independent readers of req's body (all the same
// empty body when it has none), from req.GetBody when set, else from the
// body, buffered once (at most MaxDuplicateBody). The original body is
// closed.
func copyBodies(req *http.Request, n int) ([]io.ReadCloser, error) {
	bodies := make([]io.ReadCloser, n)
	if req.Body == nil || req.Body == http.NoBody {
		for i := range bodies {
			bodies[i] = req.Body
		}
		return bodies, nil
	}
	getBody := req.GetBody
	if getBody == nil {
		if req.ContentLength > MaxDuplicateBody {
			req.Body.Close()
			return nil, ErrDuplicateBody
		}
		buf, err := io.ReadAll(io.LimitReader(req.Body, MaxDuplicateBody+1))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(buf) > MaxDuplicateBody {
			return nil, ErrDuplicateBody
		}
		getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	} else {
		req.Body.Close()
	}
	for i := range bodies {
		b, err := getBody()
		if err != nil {
			for _, c := range bodies[:i] {
				c.Close()
			}
			return nil, err
		}
		bodies[i] = b
	}
	return bodies, nil
}
