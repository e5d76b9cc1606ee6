package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// bound is how long a test waits for something that should happen at once.
var bound = testenv.Bound(10 * time.Second) // longer under -race

// server is a test target that counts the requests it received and the ones
// it completed. Each request takes work, or, when release is set, until
// release is closed (whatever the client does meanwhile).
type server struct {
	URL       string
	received  atomic.Int64
	completed atomic.Int64
	work      time.Duration
	release   chan struct{}
	arrived   chan struct{} // one value per received request
	done      chan struct{} // one value per completed request

	once   sync.Once
	mu     sync.Mutex
	bodies []string

	srv *httptest.Server
}

// newServer starts a server whose handlers take work each; it is closed at
// the end of the test.
func newServer(t *testing.T, work time.Duration) *server {
	t.Helper()
	return startServer(t, &server{work: work})
}

// newHoldingServer starts a server whose handlers wait until unblock is
// called (at the latest when the test ends).
func newHoldingServer(t *testing.T) *server {
	t.Helper()
	return startServer(t, &server{release: make(chan struct{})})
}

func startServer(t *testing.T, s *server) *server {
	s.arrived = make(chan struct{}, 100)
	s.done = make(chan struct{}, 100)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	t.Cleanup(s.unblock) // runs first: Close waits for the handlers
	return s
}

// unblock lets held handlers complete.
func (s *server) unblock() {
	s.once.Do(func() {
		if s.release != nil {
			close(s.release)
		}
	})
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	n := s.received.Add(1)
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	s.arrived <- struct{}{}
	if s.release != nil {
		<-s.release
	} else if s.work > 0 {
		time.Sleep(s.work) // the server's own work: it ignores the client
	}
	s.completed.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":"ch_%d","body":%q}`, n, body)
	s.done <- struct{}{}
}

// wait receives one value from ch, or fails the test after bound.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(bound):
		t.Fatalf("%s did not happen within %v", what, bound)
	}
}

// newBase returns a fresh http.Transport whose idle connections are closed at
// the end of the test, so goleak sees no connection goroutines.
func newBase(t *testing.T) *http.Transport {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// post builds a POST to url with a JSON body carrying fault f, with GetBody
// set (as http.NewRequest does for a bytes.Reader).
func post(t *testing.T, ctx context.Context, url string, f Fault) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(WithFault(ctx, f), http.MethodPost, url, bytes.NewReader([]byte(`{"amount":100}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", "k1")
	return req
}

// trackedBody records whether it was closed.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

func newTracked(s string) *trackedBody { return &trackedBody{Reader: bytes.NewReader([]byte(s))} }

// fakeRT is a RoundTripper that answers from a function and counts calls.
type fakeRT struct {
	calls atomic.Int64
	fn    func(req *http.Request) (*http.Response, error)
}

func (f *fakeRT) RoundTrip(req *http.Request) (*http.Response, error) {
	f.calls.Add(1)
	return f.fn(req)
}

// errRT always fails with err, after closing the request body.
func errRT(err error) *fakeRT {
	return &fakeRT{fn: func(req *http.Request) (*http.Response, error) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}}
}

// collectSpecErrors walks an error tree and returns every *SpecError in it.
func collectSpecErrors(err error) []*SpecError {
	var out []*SpecError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if se, ok := e.(*SpecError); ok {
			out = append(out, se)
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

var errBoom = errors.New("boom")
