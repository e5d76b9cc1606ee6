package cmd

import (
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A private CA: refused by default with a hint, trusted with --ca-cert,
// and with --insecure.
func TestRunTLSKnobs(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(&payServer{idempotent: true, charges: map[string]int{}, answers: map[string][]byte{}})
	t.Cleanup(srv.Close)
	sc := writeScenario(t, payScenario)
	r := runMain(t, nil, "run", sc, "--target", srv.URL, "--seed", "1")
	if r.code != ExitRuntime || !strings.Contains(r.err, "certificate") {
		t.Errorf("run against a private CA: exit %d, want %d naming the certificate\n%s", r.code, ExitRuntime, r.err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runMain(t, nil, "run", sc, "--target", srv.URL, "--seed", "1", "--ca-cert", ca); r.code != ExitOK {
		t.Errorf("run --ca-cert: exit %d, want 0\n%s%s", r.code, r.out, r.err)
	}
	if r := runMain(t, nil, "run", sc, "--target", srv.URL, "--seed", "1", "--insecure"); r.code != ExitOK {
		t.Errorf("run --insecure: exit %d, want 0\n%s%s", r.code, r.out, r.err)
	}
	if r := runMain(t, nil, "run", sc, "--target", srv.URL, "--ca-cert", filepath.Join(t.TempDir(), "none.pem")); r.code != ExitUsage {
		t.Errorf("run --ca-cert missing file: exit %d, want %d", r.code, ExitUsage)
	}
}

// --http-debug prints the first N exchanges on stderr, secrets masked.
func TestRunHTTPDebug(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, true)
	sc := strings.Replace(payScenario, "  key: {header: Idempotency-Key}", "  key: {header: Idempotency-Key}\n  headers: {Authorization: 'Bearer s3cr3t-t0ken'}", 1)
	r := runMain(t, nil, "run", writeScenario(t, sc), "--target", srv.URL, "--seed", "1", "--http-debug=4")
	if r.code != ExitOK {
		t.Fatalf("run --http-debug: exit %d\n%s%s", r.code, r.out, r.err)
	}
	// the preflight, the oracle's reading before the load, then POSTs
	if n := strings.Count(r.err, "> #"); n != 4 || !strings.Contains(r.err, "POST "+srv.URL+"/pay") {
		t.Errorf("--http-debug=4 printed %d requests, want 4 with the operation's POSTs:\n%s", n, r.err)
	}
	if strings.Contains(r.err, "s3cr3t") || !strings.Contains(r.err, "Authorization: xxxxx") {
		t.Errorf("--http-debug shows the token or hides the header:\n%s", r.err)
	}
}

// --dry-run renders the plan and the first requests and sends nothing; a
// --target that replaces the file's is said on stderr.
func TestRunDryRunAndTargetNotice(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	sc := "target: http://127.0.0.1:1\n" + strings.Replace(payScenario, "  key: {header: Idempotency-Key}", "  key: {header: Idempotency-Key}\n  headers: {Authorization: 'Bearer {{env \"TOKEN\"}}'}", 1)
	r := runMain(t, map[string]string{"TOKEN": "s3cr3t-t0ken"}, "run", writeScenario(t, sc), "--target", srv.URL, "--dry-run")
	if r.code != ExitOK || hits.Load() != 0 {
		t.Fatalf("run --dry-run: exit %d, %d requests sent; want 0 and none\n%s%s", r.code, hits.Load(), r.out, r.err)
	}
	for _, want := range []string{"dry run", "> op 0: POST", "> op 2: POST", "Idempotency-Key: <key of op 0>", "fault: drop_ack", "invariant: exactly_once"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("--dry-run output lacks %q:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "s3cr3t") {
		t.Errorf("--dry-run shows the token:\n%s", r.out)
	}
	if !strings.Contains(r.err, "from --target, replacing the file's http://127.0.0.1:1") {
		t.Errorf("stderr does not say --target replaced the file's target:\n%s", r.err)
	}
}

// --listen is the listening address everywhere; --addr, the old spelling,
// still works.
func TestListenAliases(t *testing.T) {
	for _, c := range []struct {
		cmd  []string
		flag string
	}{{[]string{"lab"}, "--addr"}, {[]string{"proxy"}, "--addr"}, {[]string{"proxy", "tcp"}, "--addr"}} {
		f := &Factory{Streams: Streams{Out: &strings.Builder{}, Err: &strings.Builder{}}, Getenv: func(string) string { return "" }}
		root := NewCmdRoot(f)
		sub, _, err := root.Find(c.cmd)
		if err != nil {
			t.Fatal(err)
		}
		if err := sub.ParseFlags([]string{c.flag, "127.0.0.1:1234"}); err != nil {
			t.Fatalf("%v %s: %v", c.cmd, c.flag, err)
		}
		other := "--addr"
		if c.flag == "--addr" {
			other = "--listen"
		}
		if got := sub.Flags().Lookup(other[2:]).Value.String(); got != "127.0.0.1:1234" {
			t.Errorf("%v %s 127.0.0.1:1234: %s = %q, want the same address", c.cmd, c.flag, other, got)
		}
	}
}

// --metrics-addr serves the run's metrics while it runs; the violations
// of a judged scenario are there after it.
func TestRunMetricsAddr(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	done := make(chan result, 1)
	go func() {
		done <- runMain(t, nil, "run", writeScenario(t, strings.Replace(payScenario, "quiet: 10ms", "quiet: 1500ms", 1)), "--target", srv.URL, "--seed", "1", "--metrics-addr", addr)
	}()
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if strings.Contains(body, `idemcheck_ops_total{scenario="pay",state="acked"}`) &&
			strings.Contains(body, `fault="drop_ack"`) {
			break // seen mid-run; the quiet period keeps the server up
		}
	}
	r := <-done
	if r.code != ExitFailed {
		t.Errorf("run on a naive server: exit %d, want 1\n%s", r.code, r.err)
	}
	for _, want := range []string{`idemcheck_attempts_total{fault="drop_ack",outcome="info",scenario="pay"`, `idemcheck_ops_total{scenario="pay",state="acked"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics during the run lacks %s:\n%s", want, body)
		}
	}
	if r := runMain(t, nil, "run", writeScenario(t, payScenario), "--target", srv.URL, "--metrics-addr", "256.0.0.1:x"); r.code != ExitUsage {
		t.Errorf("run --metrics-addr bad: exit %d, want %d", r.code, ExitUsage)
	}
}
