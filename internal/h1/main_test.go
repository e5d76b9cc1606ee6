package h1

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.Parallel(6) // the stages of a limit or a context's end, each waiting for it, side by side
	goleak.VerifyTestMain(m)
}

// bound is how long a test waits for something that should happen at once.
var bound = testenv.Bound(10 * time.Second) // longer under -race

// target is an httptest server that counts the connections it accepted.
type target struct {
	*httptest.Server
	conns atomic.Int64
}

func newTarget(t *testing.T, h http.HandlerFunc) *target {
	t.Helper()
	s := &target{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// rawServer accepts connections on loopback and runs serve on each; it
// closes them and waits for serve to return when the test ends.
func rawServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) (addr string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(c, bufio.NewReader(c))
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String(), accepted
}

// readRequest reads one request (headers and body) from br; ok is false
// when the connection ended.
func readRequest(br *bufio.Reader) (*http.Request, bool) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, false
	}
	io.Copy(io.Discard, req.Body)
	return req, true
}

func newTransport(t *testing.T) *Transport {
	t.Helper()
	tr := New(&http.Transport{}, 4)
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return c
}

// do sends a request through tr and returns the answer with its body read.
func do(t *testing.T, tr http.RoundTripper, method, url, body string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx(t), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip(%s %s) error = %v", method, url, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp, string(b)
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// roundTripEnd sends req through tr and, when readBody is true, reads the
// answer's body to its end; it returns the error that ended the request:
// RoundTrip's, else the body's. A RoundTrip error where a body was to be
// read fails the test.
func roundTripEnd(t *testing.T, tr http.RoundTripper, req *http.Request, readBody bool) error {
	t.Helper()
	resp, err := tr.RoundTrip(req)
	if !readBody {
		return err
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	return err
}
