package cmd

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// TestProxyLogAndAPI: --log writes a JSON line per request, --api turns
// the faults off mid-run, and the proxy's last line gives its stats.
func TestProxyLogAndAPI(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer up.Close()
	addr, apiAddr := closedAddr(t), closedAddr(t)
	logFile := filepath.Join(t.TempDir(), "requests.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- proxyRun(ctx, &ProxyOptions{Streams: Streams{Out: &bytes.Buffer{}, Err: &errb}, Listen: addr, Target: up.URL,
			Faults: []string{"reset=1"}, Seed: 1, API: apiAddr, Log: logFile, KeyHeader: "Idempotency-Key"})
	}()
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + apiAddr + "/faults")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	post := func() error {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/charges", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "k-1")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if post() == nil {
		t.Errorf("under reset=1 the client got an answer")
	}
	req, _ := http.NewRequest(http.MethodPut, "http://"+apiAddr+"/faults", strings.NewReader(`{"faults":[]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /faults: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := post(); err != nil {
		t.Errorf("with the faults off: %v", err)
	}
	cancel()
	if err := <-done; exitCodeOf(err) != ExitInterrupted {
		t.Errorf("proxyRun after a signal = %v", err)
	}
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"fault":"reset"`) || !strings.Contains(lines[1], `"status":201`) || !strings.Contains(lines[1], `"key":"k-1"`) {
		t.Errorf("request log:\n%s\nwant the reset, then the 201, each with its key", raw)
	}
	if !strings.Contains(errb.String(), "proxy stopped: 2 requests; keys 1 distinct, 1 repeated; faults reset 1; answers 201 1, closed 1") {
		t.Errorf("the proxy's last line lacks its stats:\n%s", errb.String())
	}
}
