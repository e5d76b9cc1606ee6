package faults

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Duplicate sends the same attempt Copies times at once, as a double submit
// or an at-least-once queue would. The server must apply it once.
type Duplicate struct {
	Copies int
}

// Kind returns KindDuplicate.
func (Duplicate) Kind() string { return KindDuplicate }

// copyResult is what one copy of a duplicated request got.
type copyResult struct {
	resp *http.Response // body already read whole and buffered
	err  error
}

// Inject sends Copies identical clones of req concurrently and returns the
// first complete answer (headers and whole body), with its body buffered.
// The other answers are drained and closed. It returns only when every copy
// has finished, so no goroutine outlives the call. If every copy fails it
// returns the first error that may have reached the server, else the first
// error. Copies below 2 count as 2.
func (d Duplicate) Inject(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	n := max(d.Copies, 2)
	bodies, err := copyBodies(req, n)
	if err != nil {
		return nil, &unsentError{fmt.Errorf("injected duplicate: copying the request body: %w", err)}
	}
	results := make(chan copyResult, n)
	var wg sync.WaitGroup
	for i := range n {
		r := req.Clone(req.Context())
		// The clone keeps req.GetBody as it is: nil keeps http.Transport
		// from silently resending a copy on a reused connection.
		r.Body = bodies[i]
		wg.Go(func() { results <- sendCopy(next, r) })
	}
	var winner *http.Response
	var firstErr, firstSent error
	for range n {
		res := <-results
		switch {
		case res.err != nil:
			if firstErr == nil {
				firstErr = res.err
			}
			if firstSent == nil && Sent(res.err) {
				firstSent = res.err
			}
		case winner == nil:
			winner = res.resp
		}
		// A later complete answer needs nothing more: sendCopy already
		// drained and closed its body.
	}
	wg.Wait()
	if winner == nil {
		// One copy that may have reached the server makes the attempt
		// indeterminate, whichever copy failed first: reporting a dial
		// error would call it unsent and let a checker demand 0 effects.
		if firstSent != nil {
			return nil, firstSent
		}
		return nil, firstErr
	}
	return winner, nil
}

// sendCopy sends one copy and reads its whole answer, so the connection is
// drained and closed whether or not the answer wins.
func sendCopy(next http.RoundTripper, r *http.Request) copyResult {
	resp, err := next.RoundTrip(r)
	if err != nil {
		return copyResult{err: err}
	}
	if err := bufferBody(resp); err != nil {
		return copyResult{err: err}
	}
	return copyResult{resp: resp}
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
