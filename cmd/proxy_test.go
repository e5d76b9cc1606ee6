package cmd

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/faults"
)

func TestParseFault(t *testing.T) {
	good := map[string]faults.Spec{
		"drop_ack=0.1":            {Kind: "drop_ack", Rate: 0.1},
		"timeout=0.05,after=50ms": {Kind: "timeout", Rate: 0.05, After: 50 * time.Millisecond},
		"duplicate=0.2,copies=3":  {Kind: "duplicate", Rate: 0.2, Copies: 3},
		"delay=1,delay=20ms":      {Kind: "delay", Rate: 1, Delay: 20 * time.Millisecond},
	}
	for in, want := range good {
		got, err := parseFault(in)
		if err != nil || got.Kind != want.Kind || got.Rate != want.Rate || got.After != want.After || got.Copies != want.Copies || got.Delay != want.Delay {
			t.Errorf("parseFault(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"drop_ack", "drop_ack=x", "timeout=0.1,after=5", "duplicate=0.1,copies=x", "delay=0.1,wait=5ms", "reset=0.1,foo"} {
		if _, err := parseFault(bad); err == nil {
			t.Errorf("parseFault(%q) = nil error, want one", bad)
		}
	}
}

// TestProxyInjects: a reset on every request reaches no upstream; a
// duplicate of every request reaches it twice.
func TestProxyInjects(t *testing.T) {
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
		if err := <-done; err != nil {
			t.Errorf("%s: proxyRun = %v", c.fault, err)
		}
		// The proxy has shut down, its handlers done: the count is final.
		if n := got.Load(); n != c.want {
			t.Errorf("%s: the upstream received %d requests, want %d", c.fault, n, c.want)
		}
	}
}
