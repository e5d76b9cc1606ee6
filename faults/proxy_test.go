package faults

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// newProxy starts a fault proxy in front of upstream with every request
// getting spec's fault, and returns a client for it.
func newProxy(t *testing.T, upstream *server, specs []Spec) (*Proxy, string, *http.Client) {
	t.Helper()
	target, err := url.Parse(upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := NewProxy(target, mustPlan(t, 1, specs))
	p.Base = newBase(t)
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	// No keep-alive: http.Transport silently resends a GET (or a request
	// with an Idempotency-Key) that fails on a reused connection, which
	// would hide the faults from the counts.
	client := newBase(t)
	client.DisableKeepAlives = true
	return p, front.URL, &http.Client{Transport: client}
}

func TestProxy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		specs     []Spec
		status    int // 0: the client gets a connection error
		received  int64
		completed int64
	}{
		{"no fault", nil, http.StatusCreated, 1, 1},
		{"drop_ack", []Spec{{Kind: KindDropAck, Rate: 1}}, 0, 1, 1},
		{"reset", []Spec{{Kind: KindReset, Rate: 1}}, 0, 0, 0},
		{"duplicate", []Spec{{Kind: KindDuplicate, Rate: 1, Copies: 3}}, http.StatusCreated, 3, 3},
		{"delay", []Spec{{Kind: KindDelay, Rate: 1, Delay: time.Millisecond}}, http.StatusCreated, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newServer(t, 0)
			p, front, c := newProxy(t, up, tc.specs)
			resp, err := c.Post(front+"/charges", "application/json", strings.NewReader(`{"amount":1}`))
			status := 0
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				status = resp.StatusCode
				if status == http.StatusCreated && !strings.Contains(string(body), `{\"amount\":1}`) {
					t.Errorf("proxied answer body = %s, want the upstream's echo of the request", body)
				}
			}
			if status != tc.status {
				t.Errorf("proxy %s: status = %d (err %v), want %d", tc.name, status, err, tc.status)
			}
			if got := up.received.Load(); got != tc.received {
				t.Errorf("proxy %s: upstream received %d, want %d", tc.name, got, tc.received)
			}
			if got := up.completed.Load(); got != tc.completed {
				t.Errorf("proxy %s: upstream completed %d, want %d", tc.name, got, tc.completed)
			}
			if got := p.Requests(); got != 1 {
				t.Errorf("proxy %s: Requests() = %d, want 1", tc.name, got)
			}
		})
	}
}

func TestProxyTimeout(t *testing.T) {
	up := newHoldingServer(t)
	_, front, c := newProxy(t, up, []Spec{{Kind: KindTimeout, Rate: 1, After: 30 * time.Millisecond}})
	c.Timeout = bound // only reached if the fault is lost
	resp, err := c.Get(front + "/slow")
	if err != nil {
		t.Fatalf("GET through a timeout proxy: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("timeout proxy answer = %d %s %s, want 504 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	up.unblock()
	wait(t, up.done, "the upstream's completion")
}

func TestProxyUpstreamDown(t *testing.T) {
	up := newServer(t, 0)
	_, front, c := newProxy(t, up, nil)
	up.srv.Close()
	resp, err := c.Get(front + "/")
	if err != nil {
		t.Fatalf("GET through a proxy to a closed upstream: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("proxy to a closed upstream = %d, want 502", resp.StatusCode)
	}
}

func TestProxyCountsOps(t *testing.T) {
	up := newServer(t, 0)
	// Op n gets a reset when the plan says so: the upstream sees exactly
	// the other requests.
	specs := []Spec{{Kind: KindReset, Rate: 0.5}}
	p, front, c := newProxy(t, up, specs)
	plan := mustPlan(t, 1, specs)
	var wantReceived int64
	for n := 1; n <= 20; n++ {
		if plan.Pick(n, 1) == nil {
			wantReceived++
		}
		resp, err := c.Get(front + "/")
		if err == nil {
			resp.Body.Close()
		} else if !errors.Is(err, io.EOF) && plan.Pick(n, 1) == nil {
			t.Errorf("request %d without a fault failed: %v", n, err)
		}
	}
	if got := up.received.Load(); got != wantReceived {
		t.Errorf("upstream received %d of %d, want %d", got, p.Requests(), wantReceived)
	}
}

// A silent upstream (it takes the request and never answers) holds no
// client forever: the proxy answers 504 after its timeout; one that stops
// in the middle of its body has the client's connection cut.
func TestProxySilentUpstream(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stall" {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); up.Close() })
	target, _ := url.Parse(up.URL)
	p := NewProxy(target, nil)
	p.Base = newBase(t)
	p.Timeout = 200 * time.Millisecond
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	client := &http.Client{Transport: newBase(t), Timeout: 10 * time.Second}

	start := time.Now()
	resp, err := client.Get(front.URL + "/silent")
	if err != nil {
		t.Fatalf("GET through the proxy to a silent upstream: %v, want a 504", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), "did not answer within 200ms") {
		t.Errorf("silent upstream: %d %s, want 504 saying it did not answer", resp.StatusCode, body)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("silent upstream: the client waited %v", took)
	}

	// On a loaded machine the upstream's headers may miss the proxy's
	// 200ms (a 504, read whole): that is the silent case above, so try
	// again, a few times, for one whose headers made it.
	status := 0
	for try := 0; try < 5; try++ {
		start = time.Now()
		resp, err = client.Get(front.URL + "/stall")
		if err == nil {
			status = resp.StatusCode
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err != nil || status != http.StatusGatewayTimeout {
			break
		}
	}
	if err == nil && status == http.StatusGatewayTimeout {
		t.Errorf("the upstream's headers never reached the proxy within 200ms in 5 tries: a stall in the body was never tested")
	} else if err == nil {
		t.Errorf("an upstream that stalls in its body: the client read it whole, want the connection cut")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stalled upstream: the client waited %v", took)
	}
}
