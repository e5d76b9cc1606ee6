package faults

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Duplicate sends the same attempt Copies times at once, as a double submit
// or an at-least-once queue would. The server must apply it once. Every
// copy goes to the request's URL: copies do not spread over replicas.
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
// carries (WithAnswers); the one returned is copy 1.
func (d Duplicate) Inject(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	n := max(d.Copies, 2)
	bodies, err := copyBodies(req, n)
	if err != nil {
		return nil, &unsentError{fmt.Errorf("injected duplicate: copying the request body: %w", err)}
	}
	ctx := req.Context()
	results := make([]copyResult, n)
	var wg sync.WaitGroup
	for i := range n {
		r := req.Clone(ctx)
		// The clone keeps req.GetBody as it is: nil keeps http.Transport
		// from silently resending a copy on a reused connection.
		r.Body = bodies[i]
		wg.Go(func() {
			results[i] = d.sendCopy(next, r)
			results[i].i = i
		})
	}
	wg.Wait()
	// The winner is the first whole answer; without one, the first error
	// that may have reached the server (one such copy makes the attempt
	// indeterminate, whichever copy failed first: a dial error would call
	// it unsent and let a checker demand 0 effects), else the first error.
	order := slices.Clone(results)
	slices.SortStableFunc(order, func(a, b copyResult) int { return a.end.Compare(b.end) })
	win := -1
	for _, pass := range []func(copyResult) bool{
		func(c copyResult) bool { return c.err == nil },
		func(c copyResult) bool { return Sent(c.err) },
		func(copyResult) bool { return true },
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
	for _, c := range results {
		if c.i == win {
			continue
		}
		others = append(others, Answer{Copy: len(others) + 2, Status: c.status, Body: c.body, Err: c.err, End: c.end})
	}
	record(ctx, others...)
	if w := results[win]; w.err != nil {
		return nil, w.err
	}
	return results[win].resp, nil
}

// sendCopy sends one copy and reads its whole answer (bounded by maxBody,
// until the request's context ends), so the connection is drained and
// closed whether or not the answer wins.
func (d Duplicate) sendCopy(next http.RoundTripper, r *http.Request) copyResult {
	resp, err := next.RoundTrip(r)
	if err != nil {
		return copyResult{err: err, end: time.Now()}
	}
	c := copyResult{status: resp.StatusCode}
	c.body, c.err = readBody(r.Context(), resp.Body, d.maxBody, 0)
	c.end = time.Now()
	if c.err != nil {
		return c
	}
	setBody(resp, c.body)
	c.resp = resp
	return c
}

// copyBodies returns n independent readers of req's body (all the same
// empty body when it has none), from req.GetBody when set, else from the
// body, buffered once. The original body is closed.
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
		buf, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
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
