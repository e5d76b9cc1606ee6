package faults

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// syncLog is a log safe for the proxy's handlers and the test.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// boundedProxy is a proxy with every request duplicated in front of
// upstream, logging to the returned log.
func boundedProxy(t *testing.T, upstream http.Handler) (string, *syncLog) {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	target, _ := url.Parse(up.URL)
	p := NewProxy(target, mustPlan(t, 1, []Spec{{Kind: KindDuplicate, Rate: 1, Copies: 2}}))
	p.Base = newBase(t)
	log := &syncLog{}
	p.Log = log
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	return front.URL, log
}

// The proxy never forwards an answer cut short: a duplicate keeps at most
// DefaultMaxBody of each copy's answer, so a longer one is refused with
// 502 and a log line, not ended cleanly at the bound.
func TestProxyDuplicateNeverTruncates(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 3*DefaultMaxBody)
	front, log := boundedProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write(long)
	}))
	resp, err := http.Post(front+"/files", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode == http.StatusOK && len(body) < len(long) {
		t.Fatalf("a %d-byte answer forwarded as a complete 200 of %d bytes", len(long), len(body))
	}
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(log.String(), "longer than") {
		t.Errorf("status %d, log %q: want 502 and a line saying why", resp.StatusCode, log.String())
	}
}

// A duplicate of an upload over MaxDuplicateBody is refused (413) rather
// than held whole in memory: nothing reaches the upstream.
func TestProxyDuplicateUploadBounded(t *testing.T) {
	t.Parallel()
	var received atomic.Int64
	front, log := boundedProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		io.Copy(io.Discard, r.Body)
	}))
	for _, chunked := range []bool{false, true} {
		var body io.Reader = bytes.NewReader(make([]byte, MaxDuplicateBody+1))
		if chunked {
			body = io.MultiReader(body) // no length known: sent chunked
		}
		resp, err := http.Post(front+"/upload", "application/octet-stream", body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked %v: status %d, want 413", chunked, resp.StatusCode)
		}
	}
	if n := received.Load(); n != 0 || !strings.Contains(log.String(), "answered 413") {
		t.Errorf("upstream received %d requests, log %q; want none and a line", n, log.String())
	}
}
