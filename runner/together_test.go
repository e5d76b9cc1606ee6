package runner

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
)

// TestTogether: the requests sent with a Together's context are held to
// their last byte and reach the server together: none completes at the
// server before Release, and Release reports them all held. A request
// that is not sent (NotSent) or carries a fault (here a reset, which never
// sends) passes the Gate, so that Release does not wait for it.
func TestTogether(t *testing.T) {
	var mu sync.Mutex
	var arrived []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		arrived = append(arrived, time.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	c, err := NewClient(ClientOptions{Targets: []*url.URL{u}, Conns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const plain = 4
	tg := c.Together(plain + 2)
	ctx := tg.With(context.Background())
	out := make([]history.Attempt, plain+1)
	var wg sync.WaitGroup
	for i := range plain + 1 {
		var f faults.Fault
		if i == plain {
			f = faults.Reset{}
		}
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/charges", strings.NewReader(`{"amount":100}`))
			out[i] = c.Send(ctx, req, 0, f)
		})
	}
	wg.Go(func() { NotSent(ctx) })
	// Nothing completes at the server while the last bytes are held.
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	early := len(arrived)
	mu.Unlock()
	if early != 0 {
		t.Errorf("%d requests completed at the server before Release", early)
	}
	held, spread := tg.Release(context.Background())
	wg.Wait()
	if held != plain {
		t.Errorf("Release held %d requests, want %d (the reset and the one not sent pass)", held, plain)
	}
	if spread <= 0 || spread > 50*time.Millisecond {
		t.Errorf("last bytes written over %v", spread)
	}
	for i, a := range out[:plain] {
		if a.Outcome != history.OK || a.Status != http.StatusCreated {
			t.Errorf("request %d: %s %d %s", i+1, a.Outcome, a.Status, a.Err)
		}
	}
	if len(arrived) != plain {
		t.Errorf("%d requests reached the server, want %d", len(arrived), plain)
	}
}

// TestTogetherGivesUp: Release returns when its context ends though a
// request never came, and the held ones go then.
func TestTogetherGivesUp(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	c, err := NewClient(ClientOptions{Targets: []*url.URL{u}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tg := c.Together(2)
	ctx := tg.With(context.Background())
	done := make(chan history.Attempt)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		done <- c.Send(ctx, req, 0, nil)
	}()
	rctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	held, _ := tg.Release(rctx)
	if a := <-done; held != 1 || a.Status != http.StatusOK {
		t.Errorf("held %d, answer %d %s; want 1 held and answered", held, a.Status, a.Err)
	}
}
