package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// echoServer answers each line with the same line, until closed.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
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
	return ln.Addr().String()
}

// startTCPProxy serves p on a free port until the test ends.
func startTCPProxy(t *testing.T, p *TCPProxy) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v, want nil after cancel", err)
		}
	})
	return ln.Addr().String()
}

func roundtrip(t *testing.T, c net.Conn, r *bufio.Reader, msg string) (string, error) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(bound))
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

func TestTCPProxyCarriesAndHolds(t *testing.T) {
	testenv.Timing(t)
	const hold = 30 * time.Millisecond
	p, err := NewTCPProxy(echoServer(t), TCPFaults{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	addr := startTCPProxy(t, p)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundtrip(t, c, r, "ping"); got != "ping" || err != nil {
		t.Fatalf("roundtrip = %q, %v; want ping", got, err)
	}
	if err := p.SetFaults(TCPFaults{Latency: hold}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if got, err := roundtrip(t, c, r, "slow"); got != "slow" || err != nil {
		t.Fatalf("roundtrip = %q, %v; want slow", got, err)
	}
	if took := time.Since(start); took < hold {
		t.Errorf("an exchange under latency %v took %v: the answer was not held", hold, took)
	}
	if s := p.Stats(); s.Exchanges != 2 || s.Conns != 1 || s.Up != 10 || s.Down != 10 {
		t.Errorf("Stats = %+v, want 2 exchanges, 1 conn, 10 bytes each way", s)
	}
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE)
}

func TestTCPProxyDownAndRestore(t *testing.T) {
	p, err := NewTCPProxy(echoServer(t), TCPFaults{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	addr := startTCPProxy(t, p)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := roundtrip(t, c, r, "a"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetFaults(TCPFaults{Down: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := roundtrip(t, c, r, "b"); !isReset(err) {
		t.Errorf("roundtrip on an open connection while down = %v, want a reset", err)
	}
	c2, err := net.Dial("tcp", addr)
	if err == nil {
		_, err = roundtrip(t, c2, bufio.NewReader(c2), "c")
		c2.Close()
	}
	if !isReset(err) {
		t.Errorf("a new connection while down: %v, want a reset", err)
	}
	if err := p.SetFaults(TCPFaults{}); err != nil {
		t.Fatal(err)
	}
	c3, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if got, err := roundtrip(t, c3, bufio.NewReader(c3), "d"); got != "d" || err != nil {
		t.Errorf("roundtrip after restore = %q, %v; want d", got, err)
	}
}

func TestTCPProxyResetAfter(t *testing.T) {
	p, err := NewTCPProxy(echoServer(t), TCPFaults{ResetAfter: 10}, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", startTCPProxy(t, p))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := roundtrip(t, c, r, "1234"); err != nil { // 5 + 5 bytes
		t.Fatal(err)
	}
	if _, err := roundtrip(t, c, r, "5"); !isReset(err) {
		t.Errorf("roundtrip past reset_after = %v, want a reset", err)
	}
	if p.Stats().Resets != 1 {
		t.Errorf("Resets = %d, want 1", p.Stats().Resets)
	}
}

func TestTCPAPI(t *testing.T) {
	p, err := NewTCPProxy("127.0.0.1:1", TCPFaults{Latency: time.Millisecond}, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(TCPAPI(p))
	defer srv.Close()
	cl := srv.Client()
	defer cl.CloseIdleConnections()
	get := func() TCPFaultsJSON {
		resp, err := cl.Get(srv.URL + "/faults")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var j TCPFaultsJSON
		if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	if j := get(); j.Latency != "1ms" || j.Down {
		t.Errorf("GET /faults = %+v, want latency 1ms, up", j)
	}
	put := func(body string) int {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/faults", strings.NewReader(body))
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := put(`{"down":true,"jitter":"2ms"}`); code != http.StatusOK {
		t.Fatalf("PUT /faults: %d", code)
	}
	if f := p.Faults(); !f.Down || f.Latency != 0 || f.Jitter != 2*time.Millisecond {
		t.Errorf("after PUT, faults = %+v; want down, jitter 2ms, latency replaced by 0", f)
	}
	for _, bad := range []string{`{"latency":"soon"}`, `{"reset_rate":2}`, `{"nope":1}`, `{`} {
		if code := put(bad); code != http.StatusBadRequest {
			t.Errorf("PUT %s = %d, want 400", bad, code)
		}
	}
	if !p.Faults().Down {
		t.Error("a rejected PUT changed the faults")
	}
}

// TestTCPProxyStopsWhileHolding: the first stop ends the proxy at once,
// dropping the data it holds (a 50 s latency does not hold the stop 50 s),
// and a latency past MaxLatency is refused.
func TestTCPProxyStopsWhileHolding(t *testing.T) {
	p, err := NewTCPProxy(echoServer(t), TCPFaults{Latency: 50 * time.Second}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "held\n"); err != nil {
		t.Fatal(err)
	}
	for p.Stats().Exchanges == 0 { // the answer is in the proxy's hands
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("Serve did not return within %v of the stop: it waits out the held data", bound)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the stop took %v", took)
	}
	for _, f := range []TCPFaults{{Latency: time.Hour}, {Jitter: 2 * MaxLatency}} {
		if err := f.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want a refusal past %v", f, MaxLatency)
		}
	}
}
