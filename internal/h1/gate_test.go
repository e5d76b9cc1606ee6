package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// A Gate holds each request's last byte: the server has all of the
// requests but their last byte until Open, then every one whole; the
// answers come back as ever.
func TestGateHoldsTheLastByte(t *testing.T) {
	const n = 3
	body := `{"amount":100}`
	partial := make(chan string, n) // what a server read before the last byte
	addr, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			b := make([]byte, len(body)-1)
			if _, err := io.ReadFull(req.Body, b); err != nil {
				return
			}
			partial <- string(b)
			if _, err := io.ReadAll(req.Body); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr := newTransport(t)
	g := NewGate(n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		req, _ := http.NewRequestWithContext(WithGate(ctx(t), g), "POST", "http://"+addr+"/charges", strings.NewReader(body))
		if !tr.Holds(req) {
			t.Fatal("Holds(a small POST to http://) = false")
		}
		wg.Go(func() { errs <- roundTripEnd(t, tr, req, true) })
	}
	select {
	case <-g.Ready():
	case <-time.After(bound):
		t.Fatal("Ready not closed once every request was held")
	}
	for range n {
		select {
		case got := <-partial:
			if got != body[:len(body)-1] {
				t.Errorf("server read %q before the last byte", got)
			}
		case <-time.After(bound):
			t.Fatal("the server did not get the requests but their last byte")
		}
	}
	select {
	case err := <-errs:
		t.Fatalf("a held request ended before Open: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	held, spread := g.Open()
	if held != n || spread <= 0 {
		t.Errorf("Open() = %d held, spread %v; want %d and a spread", held, spread, n)
	}
	wg.Wait()
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("held request: %v", err)
		}
	}
	if held, _ := g.Open(); held != 0 {
		t.Errorf("a second Open() = %d held, want 0", held)
	}
}

// A request the Gate cannot hold (https, through the fallback) passes it,
// so that Ready still comes; one whose context ends while held fails
// without waiting for Open, as sent (its bytes reached the server).
func TestGatePassesAndGivesUp(t *testing.T) {
	addr, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
		}
	})
	fellBack := make(chan struct{}, 1)
	tr := New(roundTripFunc(func(*http.Request) (*http.Response, error) {
		fellBack <- struct{}{}
		return nil, errors.New("fallback")
	}), 4)
	t.Cleanup(tr.CloseIdleConnections)
	g := NewGate(2)
	c1, cancel := context.WithCancel(ctx(t))
	held, _ := http.NewRequestWithContext(WithGate(c1, g), "POST", "http://"+addr+"/", strings.NewReader("x"))
	tls, _ := http.NewRequestWithContext(WithGate(ctx(t), g), "POST", "https://"+addr+"/", strings.NewReader("x"))
	if tr.Holds(tls) {
		t.Error("Holds(an https request) = true")
	}
	done := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(held)
		done <- err
	}()
	if _, err := tr.RoundTrip(tls); err == nil {
		t.Error("the fallback's error was lost")
	}
	<-fellBack
	select {
	case <-g.Ready():
	case <-time.After(bound):
		t.Fatal("Ready not closed: the https request did not pass the gate")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || Unsent(err) {
			t.Errorf("held request whose context ended: %v (unsent %v), want context.Canceled, sent", err, Unsent(err))
		}
	case <-time.After(bound):
		t.Fatal("a held request whose context ended waited for Open")
	}
	g.Open()
}
