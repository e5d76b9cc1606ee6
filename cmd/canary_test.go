package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// canarySecret is planted in every place a user can put a secret; it must
// come out of no stream and no file.
const canarySecret = "Cn4ry7Secret9Q"

// canaryScenario sends the secret in a header and the body, and reads
// oracles whose URLs carry it: an HTTP ledger with secret query parameters
// outside any fixed list, a Postgres and a Redis URL from the environment.
const canaryScenario = `name: canary
operation:
  method: POST
  path: /pay
  headers: {Authorization: 'Bearer {{env "API_TOKEN"}}', X-Api-Key: '{{env "API_TOKEN"}}'}
  key: {header: Idempotency-Key}
  body: '{"amount": 100, "note": "{{env "API_TOKEN"}}"}'
load: {ops: 12, concurrency: 2}
retry: {attempts: 2, backoff: {initial: 1ms, max: 2ms}}
quiet: 1ms
oracles:
  - name: ledger_http
    effects:
      bulk: {path: '/counts?private_token={{env "API_TOKEN"}}&x-api-key={{env "API_TOKEN"}}&session={{env "API_TOKEN"}}', value: "$.counts"}
  - name: ledger_sql
    effects:
      sql:
        url: '{{env "LEDGER_URL"}}'
        grouped: SELECT idempotency_key, count(*) FROM payments GROUP BY 1
  - name: store
    effects:
      redis:
        url: '{{env "STORE_URL"}}'
        pattern: 'resp:%s'
        mode: exists
invariants:
  - {check: exactly_once, oracle: ledger_http}
  - {check: exactly_once, oracle: ledger_sql}
  - {check: exactly_once, oracle: store}
`

// canaryServer charges once per key and answers its ledger reads with a
// 500 that names the URL it was asked for, query and all, so the oracle's
// error carries the URL.
func canaryServer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]bool{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/counts" {
			http.Error(w, "ledger down", http.StatusInternalServerError)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		status := http.StatusCreated
		if seen[key] {
			status = http.StatusOK
		}
		seen[key] = true
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"id": "ch_" + key})
	}))
	t.Cleanup(s.Close)
	return s
}

// TestCanarySecretNeverOutput plants one secret in the target URL's
// userinfo, a header and the body (through {{env}}), and in the HTTP,
// Postgres and Redis oracle URLs, then runs every report format with
// --out and looks for it in stdout, stderr and every file written.
func TestCanarySecretNeverOutput(t *testing.T) {
	srv := canaryServer(t)
	closed := closedAddr(t) // nothing listens: the SQL and Redis oracles fail to connect
	env := map[string]string{
		"API_TOKEN":  canarySecret,
		"LEDGER_URL": "Postgres://app:" + canarySecret + "@" + closed + "/ledger?sslmode=disable&password=" + canarySecret + "&private_token=" + canarySecret,
		"STORE_URL":  "REDIS://:" + canarySecret + "@" + closed + "/0?session=" + canarySecret,
	}
	target := strings.Replace(srv.URL, "http://", "http://bob:"+canarySecret+"@", 1)
	scenario := writeScenario(t, canaryScenario)
	for _, format := range []string{"text", "json", "markdown", "junit"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			r := runMain(t, env, "run", scenario, "--target", target, "--seed", "1", "--format", format, "--out", dir)
			if r.code != ExitInconclusive {
				t.Errorf("run with unreadable oracles: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, ExitInconclusive, r.out, r.err)
			}
			// the oracles did fail, so their URLs were written somewhere
			if !strings.Contains(r.out+r.err, "ledger_http") {
				t.Errorf("the report does not name the failed oracle:\n%s%s", r.out, r.err)
			}
			noCanary(t, "stdout", r.out)
			noCanary(t, "stderr", r.err)
			files := 0
			err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				files++
				noCanary(t, path, string(b))
				return nil
			})
			if err != nil || files < 2 {
				t.Errorf("--out %s: %d files, error %v; want report.json and history.jsonl", dir, files, err)
			}
		})
	}
}

// TestCanaryProxyTarget gives proxy targets that are not http(s) URLs,
// and one it forwards to with a password and a token in its query: no
// message shows the secret.
func TestCanaryProxyTarget(t *testing.T) {
	for _, target := range []string{
		"ftp://u:" + canarySecret + "@files.example.com/x",
		"Ftp://u:" + canarySecret + "@files.example.com/x?token=" + canarySecret,
		"http://u:p%zz" + canarySecret + "@127.0.0.1:1/",
		"host=127.0.0.1 password=" + canarySecret,
	} {
		r := runMain(t, nil, "proxy", "--target", target)
		if r.code != ExitUsage {
			t.Errorf("proxy --target %s: exit %d, want %d\n%s", target, r.code, ExitUsage, r.err)
		}
		noCanary(t, fmt.Sprintf("proxy --target %s: stderr", target), r.err)
		noCanary(t, fmt.Sprintf("proxy --target %s: stdout", target), r.out)
	}

	up := canaryServer(t)
	target := strings.Replace(up.URL, "http://", "http://u:"+canarySecret+"@", 1) + "/?token=" + canarySecret
	addr := closedAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan ExitCode, 1)
	go func() {
		done <- Main(ctx, []string{"proxy", "--listen", addr, "--target", target},
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) string { return "" })
	}()
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + addr + "/pay")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	cancel()
	<-done
	if !strings.Contains(errb.String(), "proxy on") {
		t.Errorf("proxy --target %s: stderr does not say where it forwards:\n%s", target, errb.String())
	}
	noCanary(t, "running proxy: stderr", errb.String())
	noCanary(t, "running proxy: stdout", out.String())
}

// noCanary fails t when text, from where, holds the canary secret.
func noCanary(t *testing.T, where, text string) {
	t.Helper()
	if i := strings.Index(text, canarySecret); i >= 0 {
		t.Errorf("%s shows the secret: …%s…", where, text[max(i-120, 0):min(i+40, len(text))])
	}
}
