package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// A Limit ends a request at its deadline with its cause, at every stage:
// waiting for the headers, reading the body, writing a body the server
// does not read.
func TestLimitEnds(t *testing.T) {
	t.Parallel()
	addr := stallServer(t)
	cause := errors.New("test limit")
	big := bytes.Repeat([]byte("x"), 64<<20) // more than the socket buffers hold
	for _, stage := range []string{"header", "body", "read"} {
		t.Run(stage, func(t *testing.T) {
			t.Parallel() // each waits stallLimit
			var body io.Reader
			if stage == "read" {
				body = bytes.NewReader(big)
			}
			limit := stallLimit // after the send, and /body's headers
			l := &Limit{Deadline: time.Now().Add(limit), Cause: cause}
			req, _ := http.NewRequestWithContext(WithLimit(ctx(t), l), "POST", "http://"+addr+"/"+stage, body)
			start := time.Now()
			err := roundTripEnd(t, newTransport(t), req, stage == "body")
			if err != cause {
				t.Errorf("error = %v, want the limit's cause %v", err, cause)
			}
			if d := time.Since(start); d < limit*4/5 || d > 5*time.Second {
				t.Errorf("ended after %v, want about the limit's %v", d, limit)
			}
		})
	}
}

// A limit that passed before the send sends nothing; a dial is bounded by
// the limit too, and both are unsent.
func TestLimitUnsent(t *testing.T) {
	cause := errors.New("test limit")
	var dials int
	fallback := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		dials++
		<-ctx.Done()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
	}}
	tr := New(fallback, 1)
	past := &Limit{Deadline: time.Now().Add(-time.Millisecond), Cause: cause}
	req, _ := http.NewRequestWithContext(WithLimit(ctx(t), past), "POST", "http://127.0.0.1:1/", strings.NewReader("x"))
	if _, err := tr.RoundTrip(req); !errors.Is(err, cause) || !Unsent(err) || dials != 0 {
		t.Errorf("limit already past: %v (Unsent %v, %d dials), want its cause, unsent, no dial", err, Unsent(err), dials)
	}
	l := &Limit{Deadline: time.Now().Add(50 * time.Millisecond), Cause: cause}
	req, _ = http.NewRequestWithContext(WithLimit(ctx(t), l), "POST", "http://127.0.0.1:1/", strings.NewReader("x"))
	start := time.Now()
	if _, err := tr.RoundTrip(req); !errors.Is(err, cause) || !Unsent(err) || dials != 1 {
		t.Errorf("dial past the limit: %v (Unsent %v, %d dials), want its cause, unsent", err, Unsent(err), dials)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the dial took %v: the limit did not bound it", d)
	}
}

// A connection keeps no deadline of an earlier request: a request
// without a limit, long after another's limit passed, is answered on the
// same connection; so is one with a later limit.
func TestLimitNotInherited(t *testing.T) {
	t.Parallel()
	srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(150 * time.Millisecond)
		}
		io.WriteString(w, "ok")
	})
	tr := newTransport(t)
	l := &Limit{Deadline: time.Now().Add(5 * time.Second), Cause: errors.New("test limit")}
	send := func(c context.Context, path string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(c, "GET", srv.URL+path, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "ok" {
			t.Fatalf("GET %s: body %q, %v", path, b, err)
		}
	}
	send(WithLimit(ctx(t), l), "/")
	// A limit the request meets even on a loaded machine (one second was
	// not, once, beside the rest of the fast suite), then passes while the
	// connection is idle for less than MaxIdleAge, after which it would
	// not be reused.
	l.Deadline = time.Now().Add(MaxIdleAge * 2 / 3)
	send(WithLimit(ctx(t), l), "/")
	time.Sleep(time.Until(l.Deadline) + 50*time.Millisecond) // the deadline passes while the connection is idle
	send(ctx(t), "/slow")
	l.Deadline = time.Now().Add(5 * time.Second)
	send(WithLimit(ctx(t), l), "/slow")
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections, want every request on one", n)
	}
}

// A request the fallback sends is bounded by its limit: the answer's
// headers and its body.
func TestLimitFallback(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	addr, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if strings.Contains(line, "/body") {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart")
		}
		<-done
	})
	t.Cleanup(func() { close(done) })
	cause := errors.New("test limit")
	fallback := &http.Transport{}
	defer fallback.CloseIdleConnections()
	tr := New(fallback, 1)
	for _, path := range []string{"/header", "/body"} {
		// The headers of /body come at once: its limit leaves a loaded
		// machine the time to read them, so that it cuts the body (500ms
		// did not, once, beside a race suite: the long suite's 2 s).
		limit := map[string]time.Duration{"/header": 50 * time.Millisecond, "/body": testenv.Pick(time.Second, 2*time.Second)}[path]
		l := &Limit{Deadline: time.Now().Add(limit), Cause: cause}
		req, _ := http.NewRequestWithContext(WithLimit(ctx(t), l), "POST", "http://"+addr+path, strings.NewReader("x"))
		req.Header.Set("Expect", "100-continue") // the fallback's
		start := time.Now()
		err := roundTripEnd(t, tr, req, path == "/body")
		if !errors.Is(err, cause) {
			t.Errorf("%s: %v, want the limit's cause", path, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v", path, d)
		}
	}
}

// The context a Limit watches ends every request in flight with it, two
// at once included (a duplicate send), with its cause; a request sent
// after it ended is unsent.
func TestLimitWatchesItsContext(t *testing.T) {
	done := make(chan struct{})
	var got atomic.Int64 // requests the server has begun to read: sent
	addr, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := br.ReadString('\n'); err != nil {
			return
		}
		got.Add(1)
		<-done
	})
	t.Cleanup(func() { close(done) })
	cause := errors.New("test cancel")
	base, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	l := &Limit{Deadline: time.Now().Add(time.Minute), Cause: errors.New("test limit")}
	lctx := WithLimit(base, l)
	tr := newTransport(t)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(lctx, "POST", "http://"+addr+"/header", strings.NewReader("x"))
			_, err := tr.RoundTrip(req)
			errs <- err
		}()
	}
	// Cancel once both are in flight: sent, their answers awaited.
	for deadline := time.Now().Add(bound); got.Load() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 requests reached the server", got.Load())
		}
	}
	cancel(cause)
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, cause) || Unsent(err) {
				t.Errorf("request in flight: %v (Unsent %v), want the context's cause, sent", err, Unsent(err))
			}
		case <-time.After(bound):
			t.Fatal("a request in flight outlived its Limit's context")
		}
	}
	req, _ := http.NewRequestWithContext(lctx, "POST", "http://"+addr+"/header", strings.NewReader("x"))
	if _, err := tr.RoundTrip(req); !errors.Is(err, cause) || !Unsent(err) {
		t.Errorf("request after the end: %v (Unsent %v), want the cause, unsent", err, Unsent(err))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) != 0 {
		t.Errorf("%d connections still watched after their requests ended", len(l.conns))
	}
}

// A server that answers before it is asked (a 503 on accept) is heard at
// once, not at the limit: the answer already there when the request is
// written is not an arrival the wait would miss.
func TestAnswerBeforeTheRequest(t *testing.T) {
	done := make(chan struct{})
	addr, _ := rawServer(t, func(c net.Conn, _ *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		<-done // neither reads nor closes
	})
	t.Cleanup(func() { close(done) })
	// The dial returns once the server's answer had time to arrive.
	var d net.Dialer
	tr := New(&http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		time.Sleep(20 * time.Millisecond)
		return c, err
	}}, 1)
	t.Cleanup(tr.CloseIdleConnections)
	for i := range 3 {
		l := &Limit{Deadline: time.Now().Add(30 * time.Second), Cause: errors.New("test limit")}
		req, _ := http.NewRequestWithContext(WithLimit(ctx(t), l), "POST", "http://"+addr+"/", strings.NewReader("x"))
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 503 {
			t.Fatalf("try %d: %v, %v; want the 503 the server sent first", i, resp, err)
		}
		resp.Body.Close()
		// At once: well before the limit, with room for a loaded machine.
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("try %d: the 503 took %v", i, d)
		}
	}
}

// A Limit without a Cause fails a request with os.ErrDeadlineExceeded,
// never with no error and no answer.
func TestLimitWithoutCause(t *testing.T) {
	addr := stallServer(t)
	tr := newTransport(t)
	for _, d := range []time.Duration{-time.Millisecond, 50 * time.Millisecond} {
		l := &Limit{Deadline: time.Now().Add(d)}
		req, _ := http.NewRequestWithContext(WithLimit(ctx(t), l), "POST", "http://"+addr+"/header", strings.NewReader("x"))
		resp, err := tr.RoundTrip(req)
		if resp != nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("deadline in %v: %v, %v; want os.ErrDeadlineExceeded", d, resp, err)
		}
	}
}

// WithHeaders keeps only the answer headers asked for; the answer is
// otherwise whole, and without it every header is kept.
func TestWithHeaders(t *testing.T) {
	srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.Header().Add("X-A", "1")
		w.Header().Add("X-A", "2")
		io.WriteString(w, "body")
	})
	tr := newTransport(t)
	for _, keep := range [][]string{nil, {"Retry-After"}, {"X-A"}} {
		c := ctx(t)
		if keep != nil {
			c = WithHeaders(c, keep...)
		}
		req, _ := http.NewRequestWithContext(c, "GET", srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "body" || resp.ContentLength != 4 {
			t.Errorf("keep %v: body %q, length %d", keep, b, resp.ContentLength)
		}
		var got []string
		for k, vs := range resp.Header {
			got = append(got, k+"="+strings.Join(vs, ","))
		}
		slices.Sort(got)
		want := map[string][]string{
			"":            {"Content-Length=4", "Content-Type=text/plain; charset=utf-8", "Date=" + resp.Header.Get("Date"), "Retry-After=3", "X-A=1,2"},
			"Retry-After": {"Retry-After=3"},
			"X-A":         {"X-A=1,2"},
		}[strings.Join(keep, "")]
		if !slices.Equal(got, want) {
			t.Errorf("keep %v: headers %v, want %v", keep, got, want)
		}
	}
}
