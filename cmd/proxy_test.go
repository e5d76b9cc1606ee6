package cmd

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestProxyInjects: a reset on every request reaches no upstream; a
// duplicate of every request reaches it twice.
func TestProxyInjects(t *testing.T) {
	t.Parallel()
	var got atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer up.Close()
	for _, c := range []struct {
		fault string
		want  int64
	}{{"reset=1", 0}, {"duplicate=1,copies=2", 2}} {
		got.Store(0)
		ctx, cancel := context.WithCancel(context.Background())
		addr := closedAddr(t)
		var errb bytes.Buffer
		done := make(chan error, 1)
		go func() {
			done <- proxyRun(ctx, &ProxyOptions{Streams: Streams{Out: &bytes.Buffer{}, Err: &errb}, Listen: addr, Target: up.URL, Faults: []string{c.fault}, Seed: 1})
		}()
		waitFor(t, func() bool {
			resp, err := http.Get("http://" + addr + "/healthz-probe")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil || !strings.Contains(err.Error(), "refused")
		})
		got.Store(0)
		resp, err := http.Post("http://"+addr+"/charges", "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
		}
		if c.want == 0 && err == nil {
			t.Errorf("%s: the client got an answer, want a closed connection", c.fault)
		}
		waitFor(t, func() bool { return got.Load() >= c.want })
		cancel()
		if err := <-done; exitCodeOf(err) != ExitInterrupted {
			t.Errorf("%s: proxyRun after a signal = %v, want exit %d", c.fault, err, ExitInterrupted)
		}
		// The proxy has shut down, its handlers done: the count is final.
		if n := got.Load(); n != c.want {
			t.Errorf("%s: the upstream received %d requests, want %d", c.fault, n, c.want)
		}
	}
}
