package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestKeepAliveReuse(t *testing.T) {
	s := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s %d %s", r.Method, r.URL.RequestURI(), r.Host, r.ContentLength, b)
	})
	tr := newTransport(t)
	for i := range 10 {
		resp, got := do(t, tr, "POST", s.URL+"/charges?n="+strconv.Itoa(i), `{"a":1}`)
		want := fmt.Sprintf(`POST /charges?n=%d %s 7 {"a":1}`, i, s.Listener.Addr())
		if resp.StatusCode != 200 || got != want || resp.ContentLength != int64(len(want)) || resp.Proto != "HTTP/1.1" || resp.Status != "200 OK" {
			t.Fatalf("answer %d = %d %q %q (length %d), want 200 %q", i, resp.StatusCode, resp.Status, got, resp.ContentLength, want)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("10 requests in a row opened %d connections, want 1", n)
	}
}

func TestRequestWireForm(t *testing.T) {
	type seen struct {
		method, uri, host, ua, key string
		cl                         int64
		te                         []string
		body                       string
	}
	got := make(chan seen, 1)
	s := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, r.Host, r.Header.Get("User-Agent"), r.Header.Get("Idempotency-Key"), r.ContentLength, r.TransferEncoding, string(b)}
	})
	tr := newTransport(t)
	for _, tc := range []struct {
		name string
		req  func() *http.Request
		want seen
	}{
		{"get", func() *http.Request {
			r, _ := http.NewRequest("GET", s.URL+"/a%20b?x=1", nil)
			return r
		}, seen{method: "GET", uri: "/a%20b?x=1", ua: "Go-http-client/1.1"}},
		{"post without body", func() *http.Request {
			r, _ := http.NewRequest("POST", s.URL, nil)
			r.Header.Set("User-Agent", "idemcheck")
			r.Header["idempotency-key"] = []string{"k1"}
			return r
		}, seen{method: "POST", uri: "/", ua: "idemcheck", key: "k1"}},
		{"host override", func() *http.Request {
			r, _ := http.NewRequest("PUT", s.URL+"/p", strings.NewReader("xyz"))
			r.Host = "api.example"
			return r
		}, seen{method: "PUT", uri: "/p", host: "api.example", ua: "Go-http-client/1.1", cl: 3, body: "xyz"}},
		{"unknown length is chunked", func() *http.Request {
			r, _ := http.NewRequest("POST", s.URL+"/c", io.MultiReader(strings.NewReader("abc"), strings.NewReader("def")))
			r.ContentLength = -1
			return r
		}, seen{method: "POST", uri: "/c", ua: "Go-http-client/1.1", cl: -1, te: []string{"chunked"}, body: "abcdef"}},
		{"big body streamed", func() *http.Request {
			r, _ := http.NewRequest("POST", s.URL+"/big", bytes.NewReader(bytes.Repeat([]byte("z"), 200<<10)))
			return r
		}, seen{method: "POST", uri: "/big", ua: "Go-http-client/1.1", cl: 200 << 10, body: strings.Repeat("z", 200<<10)}},
		{"big unknown length", func() *http.Request {
			r, _ := http.NewRequest("POST", s.URL+"/bigc", io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("y"), 100<<10))))
			r.ContentLength = -1
			return r
		}, seen{method: "POST", uri: "/bigc", ua: "Go-http-client/1.1", cl: -1, te: []string{"chunked"}, body: strings.Repeat("y", 100<<10)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req().WithContext(ctx(t))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			g := <-got
			want := tc.want
			if want.host == "" {
				want.host = s.Listener.Addr().String()
			}
			if fmt.Sprint(g) != fmt.Sprint(want) {
				t.Errorf("server saw %.200v, want %.200v", g, want)
			}
		})
	}
}

func TestChunkedAnswer(t *testing.T) {
	s := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		for i := range 5 {
			fmt.Fprintf(w, "part%d;", i)
			w.(http.Flusher).Flush()
		}
	})
	tr := newTransport(t)
	for range 3 {
		resp, got := do(t, tr, "GET", s.URL, "")
		if got != "part0;part1;part2;part3;part4;" || resp.ContentLength != -1 || fmt.Sprint(resp.TransferEncoding) != "[chunked]" || resp.Header["Transfer-Encoding"] != nil {
			t.Fatalf("chunked answer = %q, length %d, %v, header %v", got, resp.ContentLength, resp.TransferEncoding, resp.Header)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("3 chunked answers took %d connections, want 1", n)
	}
}

// A raw chunked answer with extensions and a trailer, and one cut off.
func TestChunkedRaw(t *testing.T) {
	addr, accepted := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for n := 0; ; n++ {
			req, ok := readRequest(br)
			if !ok {
				return
			}
			if req.URL.Path == "/cut" {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"+
				"5;ext=1\r\nhello\r\n1 \r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n")
		}
	})
	tr := newTransport(t)
	for range 2 {
		if _, got := do(t, tr, "GET", "http://"+addr+"/", ""); got != "hello world" {
			t.Fatalf("body %q, want %q", got, "hello world")
		}
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
	req, _ := http.NewRequestWithContext(ctx(t), "GET", "http://"+addr+"/cut", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("reading a cut chunked body: %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestConnectionClose(t *testing.T) {
	s := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, "ok")
	})
	tr := newTransport(t)
	for range 3 {
		if resp, got := do(t, tr, "GET", s.URL+"/close", ""); got != "ok" || !resp.Close {
			t.Fatalf("answer %q close %v, want ok and Close", got, resp.Close)
		}
	}
	if n := s.conns.Load(); n != 3 {
		t.Errorf("3 answers with Connection: close took %d connections, want 3", n)
	}
	// A request with Close asks the server to close, and is not reused.
	req, _ := http.NewRequestWithContext(ctx(t), "GET", s.URL+"/", nil)
	req.Close = true
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	do(t, tr, "GET", s.URL+"/", "")
	if n := s.conns.Load(); n != 5 {
		t.Errorf("after a request with Close, %d connections, want 5", n)
	}
}

func TestHTTP10(t *testing.T) {
	addr, accepted := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(br)
			if !ok {
				return
			}
			switch req.URL.Path {
			case "/eof": // no length: the body ends with the connection
				io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end")
				return
			case "/keep":
				io.WriteString(c, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 4\r\n\r\nkept")
			}
		}
	})
	tr := newTransport(t)
	resp, got := do(t, tr, "GET", "http://"+addr+"/eof", "")
	if got != "until the end" || resp.Proto != "HTTP/1.0" || resp.ProtoMinor != 0 || !resp.Close || resp.ContentLength != -1 {
		t.Errorf("HTTP/1.0 answer = %q %s close %v length %d", got, resp.Proto, resp.Close, resp.ContentLength)
	}
	for range 2 {
		if _, got := do(t, tr, "GET", "http://"+addr+"/keep", ""); got != "kept" {
			t.Errorf("keep-alive 1.0 answer = %q", got)
		}
	}
	if n := accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (one closed, one kept alive)", n)
	}
}

func TestBodylessAnswers(t *testing.T) {
	s := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		default:
			w.Header().Set("Content-Length", "100")
			w.Write(make([]byte, 100))
		}
	})
	tr := newTransport(t)
	for _, tc := range []struct {
		method, path string
		status       int
		length       int64
	}{
		{"HEAD", "/", 200, 100},
		{"GET", "/204", 204, 0},
		{"GET", "/304", 304, 0},
		{"HEAD", "/", 200, 100},
		{"GET", "/", 200, 100},
	} {
		resp, got := do(t, tr, tc.method, s.URL+tc.path, "")
		wantBody := ""
		if tc.method == "GET" && tc.status == 200 {
			wantBody = string(make([]byte, 100))
		}
		if resp.StatusCode != tc.status || got != wantBody || resp.ContentLength != tc.length {
			t.Errorf("%s %s = %d, %d bytes, length %d; want %d, %d bytes, length %d", tc.method, tc.path, resp.StatusCode, len(got), resp.ContentLength, tc.status, len(wantBody), tc.length)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

func TestInformationalSkipped(t *testing.T) {
	addr, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n"+
				"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-Multi: a\r\nx-multi: b\r\nX-Fold: one\r\n  two\r\n\r\nok")
		}
	})
	tr := newTransport(t)
	resp, got := do(t, tr, "POST", "http://"+addr+"/", "x")
	if resp.StatusCode != 201 || resp.Status != "201 Created" || got != "ok" {
		t.Fatalf("answer after 1xx = %q %q, want 201 Created ok", resp.Status, got)
	}
	if h := resp.Header; fmt.Sprint(h["X-Multi"]) != "[a b]" || h.Get("X-Fold") != "one two" || h.Get("Link") != "" || h.Get("Content-Length") != "2" {
		t.Errorf("header = %v, want the final answer's, canonical, folded", h)
	}
}

func TestMalformedAnswers(t *testing.T) {
	for _, answer := range []string{
		"HTTP/2.0 200 OK\r\n\r\n",
		"HTTP/1.1 2x0 OK\r\n\r\n",
		"ICY 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 6) + "HTTP/1.1 200 OK\r\n\r\n",
	} {
		addr, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
			if _, ok := readRequest(br); ok {
				io.WriteString(c, answer)
			}
		})
		req, _ := http.NewRequestWithContext(ctx(t), "GET", "http://"+addr+"/", nil)
		resp, err := newTransport(t).RoundTrip(req)
		if err == nil {
			resp.Body.Close()
			t.Errorf("answer %q: no error", answer)
			continue
		}
		if Unsent(err) {
			t.Errorf("answer %q: Unsent(%v) = true, the request was written", answer, err)
		}
		// trial tells a target that speaks another protocol by these
		// words, which net/http's errors hold too.
		var pe *protocolError
		if errors.As(err, &pe) && !strings.Contains(err.Error(), "malformed HTTP") {
			t.Errorf("answer %q: %v does not say malformed HTTP", answer, err)
		}
	}
}

func TestHugeBodyStreams(t *testing.T) {
	const size = 64 << 20
	s := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/length" {
			w.Header().Set("Content-Length", strconv.Itoa(size))
		}
		buf := make([]byte, 64<<10)
		for n := 0; n < size; n += len(buf) {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	})
	tr := newTransport(t)
	for _, path := range []string{"/length", "/chunked"} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		req, _ := http.NewRequestWithContext(ctx(t), "GET", s.URL+path, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, make([]byte, 32<<10))
		resp.Body.Close()
		runtime.ReadMemStats(&after)
		if err != nil || n != size {
			t.Fatalf("%s: read %d bytes, %v; want %d", path, n, err, size)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
			t.Errorf("%s: reading %d MiB allocated %d bytes: the body is buffered", path, size>>20, alloc)
		}
	}
}

func TestEarlyClose(t *testing.T) {
	s := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		w.Write(make([]byte, n))
	})
	tr := newTransport(t)
	for _, tc := range []struct {
		query string
		conns int64 // connections after the early close and one more request
	}{
		{"n=20000", 1},                  // drained: reused
		{"n=20000&chunked=1", 1},        // drained: reused
		{"n=" + strconv.Itoa(8<<20), 2}, // too long to drain: closed
	} {
		t.Run(tc.query, func(t *testing.T) {
			s.conns.Store(0)
			tr.CloseIdleConnections()
			req, _ := http.NewRequestWithContext(ctx(t), "GET", s.URL+"/?"+tc.query, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := resp.Body.Read(make([]byte, 10)); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if _, err := resp.Body.Read(make([]byte, 10)); !errors.Is(err, ErrBodyClosed) {
				t.Errorf("Read after Close = %v, want ErrBodyClosed", err)
			}
			do(t, tr, "GET", s.URL+"/?n=5", "")
			if n := s.conns.Load(); n != tc.conns {
				t.Errorf("%d connections, want %d", n, tc.conns)
			}
		})
	}
}

// stallServer answers what stage says: "header" never answers, "body"
// sends the headers and part of the body then stalls, "read" never reads
// the request. It stalls until the test ends.
// stallLimit is when a request to stallServer ends where the test means
// it to end only once it was sent (partly, for a body larger than the
// socket buffers) or its answer's headers were read (/body): long enough
// for a loaded machine to dial, write and read that far.
const stallLimit = 500 * time.Millisecond

func stallServer(t *testing.T) string {
	done := make(chan struct{})
	addr, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		switch {
		case strings.Contains(line, "/header"):
		case strings.Contains(line, "/body"):
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart")
		case strings.Contains(line, "/read"):
		}
		<-done
	})
	t.Cleanup(func() { close(done) }) // before rawServer's cleanup
	return addr
}

func TestContextEnds(t *testing.T) {
	t.Parallel()
	addr := stallServer(t)
	cause := errors.New("test deadline")
	big := bytes.Repeat([]byte("x"), 64<<20) // more than the socket buffers hold
	for _, stage := range []string{"header", "body", "read"} {
		for _, kind := range []string{"cancel", "deadline"} {
			t.Run(stage+"/"+kind, func(t *testing.T) {
				t.Parallel() // each waits stallLimit
				var c context.Context
				var cancel context.CancelFunc
				end := stallLimit // after the send: the request is not unsent
				if kind == "cancel" {
					var cc context.CancelCauseFunc
					c, cc = context.WithCancelCause(context.Background())
					time.AfterFunc(end, func() { cc(cause) })
					cancel = func() { cc(nil) }
				} else {
					c, cancel = context.WithTimeoutCause(context.Background(), end, cause)
				}
				defer cancel()
				var body io.Reader
				if stage == "read" {
					body = bytes.NewReader(big)
				}
				req, _ := http.NewRequestWithContext(c, "POST", "http://"+addr+"/"+stage, body)
				start := time.Now()
				err := roundTripEnd(t, newTransport(t), req, stage == "body")
				if !errors.Is(err, cause) {
					t.Errorf("error = %v, want the context's cause %v", err, cause)
				}
				if Unsent(err) {
					t.Errorf("Unsent(%v) = true, but the request was (partly) written", err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("took %v to notice the context's end", d)
				}
			})
		}
	}
}

// Dialing honours the context, and a dial that fails is unsent.
func TestDialUnsent(t *testing.T) {
	cause := errors.New("test deadline")
	dialed := make(chan struct{}, 1)
	fallback := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		dialed <- struct{}{}
		<-ctx.Done()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
	}}
	tr := New(fallback, 1)
	c, cancel := context.WithTimeoutCause(context.Background(), 50*time.Millisecond, cause)
	defer cancel()
	req, _ := http.NewRequestWithContext(c, "POST", "http://127.0.0.1:1/", strings.NewReader("x"))
	_, err := tr.RoundTrip(req)
	<-dialed
	if !errors.Is(err, cause) || !Unsent(err) {
		t.Errorf("dial cut by the context: %v (Unsent %v), want the cause, unsent", err, Unsent(err))
	}
	var u interface{ Unsent() bool }
	if !errors.As(err, &u) || !u.Unsent() {
		t.Errorf("%v does not answer Unsent() true through errors.As", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	req, _ = http.NewRequestWithContext(ctx(t), "POST", "http://"+closed+"/", strings.NewReader("x"))
	_, err = newTransport(t).RoundTrip(req)
	var op *net.OpError
	if !Unsent(err) || !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("connection refused: %v, want an unsent dial *net.OpError", err)
	}

	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	req, _ = http.NewRequestWithContext(done, "POST", "http://"+closed+"/", strings.NewReader("x"))
	if _, err = newTransport(t).RoundTrip(req); !errors.Is(err, context.Canceled) || !Unsent(err) {
		t.Errorf("context done before: %v, want context.Canceled, unsent", err)
	}
}

// The transport never resends: a server that reads the request and hangs
// up mid-answer gets it once, on a new connection and on a reused one.
func TestNoResend(t *testing.T) {
	var reqs atomic.Int64
	addr, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for n := 0; ; n++ {
			if _, ok := readRequest(br); !ok {
				return
			}
			reqs.Add(1)
			if n == 1 {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-") // and hang up
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr := newTransport(t)
	do(t, tr, "POST", "http://"+addr+"/", "a")
	req, _ := http.NewRequestWithContext(ctx(t), "POST", "http://"+addr+"/", strings.NewReader("b"))
	req.Header.Set("Idempotency-Key", "k1")
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("b")), nil }
	if _, err := tr.RoundTrip(req); err == nil || Unsent(err) {
		t.Fatalf("answer cut off: error %v (unsent %v), want a sent error", err, Unsent(err))
	}
	if n := reqs.Load(); n != 2 {
		t.Errorf("server read %d requests, want 2 (no resend)", n)
	}
}

// A kept-alive connection the server closed while idle is noticed and
// not used: the request goes on a new one.
func TestStaleIdleConnection(t *testing.T) {
	s := newTarget(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := newTransport(t)
	do(t, tr, "GET", s.URL, "")
	s.CloseClientConnections()
	// The server's FIN reaches the idle connection (loopback: at once).
	p := tr.pool(s.Listener.Addr().String())
	deadline := time.Now().Add(bound)
	for {
		p.mu.Lock()
		c := p.idle[0]
		p.mu.Unlock()
		if !c.alive() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle connection still looks alive after the server closed it")
		}
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		do(t, tr, "GET", s.URL, "")
	}
	if n := s.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestIdleAge(t *testing.T) {
	s := newTarget(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := newTransport(t)
	do(t, tr, "GET", s.URL, "")
	p := tr.pool(s.Listener.Addr().String())
	p.mu.Lock()
	p.idle[0].idleAt = time.Now().Add(-MaxIdleAge)
	p.mu.Unlock()
	do(t, tr, "GET", s.URL, "")
	if n := s.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: one idle for MaxIdleAge is not reused", n)
	}
}

func TestIdleLimit(t *testing.T) {
	s := newTarget(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := New(nil, 2)
	defer tr.CloseIdleConnections()
	var resps []*http.Response
	for range 4 {
		req, _ := http.NewRequestWithContext(ctx(t), "GET", s.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resps = append(resps, resp)
	}
	for _, r := range resps {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	p := tr.pool(s.Listener.Addr().String())
	if n := len(p.idle); n != 2 {
		t.Errorf("%d idle connections, want 2 (the limit)", n)
	}
}

func TestConcurrent(t *testing.T) {
	s := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Query().Get("chunked") != "" {
			w.Write(b[:1])
			w.(http.Flusher).Flush()
			w.Write(b[1:])
			return
		}
		w.Write(b)
	})
	tr := New(nil, 8)
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				body := fmt.Sprintf("g%d-i%d", g, i)
				u := s.URL + "/"
				if i%3 == 0 {
					u += "?chunked=1"
				}
				req, _ := http.NewRequestWithContext(context.Background(), "POST", u, strings.NewReader(body))
				resp, err := tr.RoundTrip(req)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != body {
					errs <- fmt.Errorf("answer %q, %v; want %q", b, err, body)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := s.conns.Load(); n > 16 {
		t.Errorf("%d connections for 16 goroutines", n)
	}
}

func TestFallback(t *testing.T) {
	var calls atomic.Int64
	fb := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		calls.Add(1)
		return &http.Response{StatusCode: 299, Body: http.NoBody, Request: req}, nil
	})
	tr := New(fb, 1)
	proxied := New(&http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy:3128") }}, 1)
	for _, tc := range []struct {
		name string
		edit func(*http.Request)
	}{
		{"https", func(r *http.Request) { r.URL.Scheme = "https" }},
		{"expect", func(r *http.Request) { r.Header.Set("Expect", "100-continue") }},
		{"upgrade", func(r *http.Request) { r.Header.Set("Upgrade", "websocket") }},
		{"userinfo", func(r *http.Request) { r.URL.User = url.UserPassword("u", "p") }},
		{"bad header value", func(r *http.Request) { r.Header.Set("X", "a\r\nb") }},
		{"bad header name", func(r *http.Request) { r.Header["X Y"] = []string{"a"} }},
		{"length without body", func(r *http.Request) { r.Body, r.ContentLength = nil, 5 }},
	} {
		calls.Store(0)
		req, _ := http.NewRequest("POST", "http://127.0.0.1:1/x", strings.NewReader("b"))
		tc.edit(req)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 299 || calls.Load() != 1 {
			t.Errorf("%s: %v, %v, %d fallback calls; want the fallback's answer", tc.name, resp, err, calls.Load())
		}
	}
	// A proxy that applies sends the request to net/http, which dials the
	// proxy (here: nowhere).
	req, _ := http.NewRequestWithContext(ctx(t), "GET", "http://example.invalid/", nil)
	proxiedErr := func() error { _, err := proxied.RoundTrip(req); return err }()
	if proxiedErr == nil || !strings.Contains(proxiedErr.Error(), "proxy") {
		t.Errorf("proxied request: %v, want net/http's proxy error", proxiedErr)
	}
	proxied.CloseIdleConnections()
}

func TestLongHeaders(t *testing.T) {
	long := strings.Repeat("v", 10<<10) // longer than the read buffer
	addr, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Long: "+long+"\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr := newTransport(t)
	resp, got := do(t, tr, "GET", "http://"+addr+"/", "")
	if got != "ok" || resp.Header.Get("X-Long") != long {
		t.Errorf("answer with a 10 KiB header: body %q, header of %d bytes", got, len(resp.Header.Get("X-Long")))
	}
	small := New(&http.Transport{MaxResponseHeaderBytes: 4 << 10}, 1)
	defer small.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx(t), "GET", "http://"+addr+"/", nil)
	if resp, err := small.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Error("a 10 KiB header with MaxResponseHeaderBytes 4 KiB: no error")
	}
}

// Bytes a server sends after its answer (here a second answer, written
// just after the first) are never read as the next request's answer: the
// connection they sit on is not reused.
func TestStaleBytesNeverAnswerTheNextRequest(t *testing.T) {
	sent := make(chan struct{}, 100) // the stale bytes are on their way
	addr, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nreal!")
			time.Sleep(50 * time.Microsecond) // a separate segment
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nSTALE")
			sent <- struct{}{}
		}
	})
	tr := New(nil, 4)
	defer tr.CloseIdleConnections()
	for i := range 50 {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "real!" {
			t.Fatalf("request %d got %q: another request's answer", i, b)
		}
		<-sent // written, so on loopback already in the client's socket
	}
}

// A flood of tiny header lines is bounded like a few long ones.
func TestHeaderLinesBounded(t *testing.T) {
	addr, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		bw := bufio.NewWriter(c)
		bw.WriteString("HTTP/1.1 200 OK\r\n")
		for range 1 << 20 { // 4 MiB of "a:\r\n": under 10 MiB of bytes
			bw.WriteString("a:\r\n")
		}
		bw.WriteString("Content-Length: 0\r\n\r\n")
		bw.Flush()
	})
	tr := New(nil, 1)
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	if resp, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "headers longer than") {
		if resp != nil {
			resp.Body.Close()
		}
		t.Fatalf("a million header lines: %v, want headers longer than the bound", err)
	}
}

// A control byte in the raw query never reaches the request line (a path
// is escaped): the request goes to net/http, which refuses it.
func TestControlBytesInURL(t *testing.T) {
	tr := New(nil, 1)
	for _, u := range []*url.URL{
		{Scheme: "http", Host: "127.0.0.1:1", Path: "/", RawQuery: "a=1 HTTP/1.1\r\nX-Injected: yes"},
		{Scheme: "http", Host: "127.0.0.1:1", Path: "/", RawQuery: "a=\x7f"},
	} {
		if tr.handles(&http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}}) {
			t.Errorf("h1 takes %q", u.String())
		}
	}
}

// A server that announces a short idle timeout (Keep-Alive: timeout=N)
// has its idle connections dropped at half of it, never reused as it
// closes them; without the header, MaxIdleAge applies.
func TestKeepAliveTimeoutHonoured(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header string
		conns  int64
	}{
		{"timeout=1", 2},          // idle 700 ms > 500 ms: a new connection
		{"timeout=5, max=100", 1}, // 700 ms < 2.5 s: reused
		{"", 1},
	} {
		t.Run(tc.header, func(t *testing.T) {
			t.Parallel() // each waits 700 ms: side by side
			srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.header != "" {
					w.Header().Set("Keep-Alive", tc.header)
				}
				io.WriteString(w, "ok")
			})
			tr := newTransport(t)
			do(t, tr, "POST", srv.URL, "x")
			time.Sleep(700 * time.Millisecond)
			do(t, tr, "POST", srv.URL, "x")
			if n := srv.conns.Load(); n != tc.conns {
				t.Errorf("Keep-Alive %q: %d connections, want %d", tc.header, n, tc.conns)
			}
		})
	}
}

func TestKeepAliveTimeoutParse(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"timeout=5":             5 * time.Second,
		"max=100, timeout=2":    2 * time.Second,
		` Timeout = "0" `:       0,
		"timeout=x":             -1,
		"max=3":                 -1,
		"timeout=9999999999999": -1,
	} {
		got, ok := keepAliveTimeout([]byte(in))
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("keepAliveTimeout(%q) = %v, want %v", in, got, want)
		}
	}
}
