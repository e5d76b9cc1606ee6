package faults

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// Serve serves the proxy until its context ends, then returns nil with
// nothing left running.
func TestProxyServe(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer up.Close()
	target, _ := url.Parse(up.URL)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := NewProxy(target, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + ln.Addr().String() + "/charges")
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("GET through the proxy = %v, %v; want 201", resp, err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil || p.Requests() != 1 {
		t.Errorf("Serve = %v after %d requests, want nil after 1", err, p.Requests())
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"64KB": 64000, "1MB": 1e6, "1GB": 1e9, "1KiB": 1024, "2MiB": 2 << 20, "1GiB": 1 << 30, "10000": 10000, "512B": 512, "1.5KB": 1500} {
		if got, err := ParseBytes(in); got != want || err != nil {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "0", "-1KB", "KB"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) = nil error, want one", bad)
		}
	}
}

// The TCP proxy takes delay and reset in the HTTP proxy's syntax, no other.
func TestTCPFaultsAdd(t *testing.T) {
	var f TCPFaults
	for _, s := range []string{"delay=0.5,delay=2ms", "reset=0.1"} {
		spec, err := ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Add(spec); err != nil {
			t.Errorf("Add(%s) = %v", s, err)
		}
	}
	if want := (TCPFaults{Latency: 2 * time.Millisecond, LatencyRate: 0.5, ResetRate: 0.1}); f != want {
		t.Errorf("Add(delay, reset) = %+v, want %+v", f, want)
	}
	spec, _ := ParseSpec("drop_ack=0.1")
	if err := f.Add(spec); !errors.Is(err, ErrNotTCP) || err.Error() != "drop_ack is an HTTP fault" {
		t.Errorf("Add(drop_ack) = %v, want ErrNotTCP saying drop_ack is an HTTP fault", err)
	}
}
