package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// canaryScenario sends the secret in a header and the body, keeps a field
// of the answers (which a reflecting server fills with the secret), and
// reads oracles whose URLs carry it: an HTTP ledger with secret query
// parameters outside any fixed list, a Postgres and a Redis URL from the
// environment, and (unparseable) ones from STORE_BAD and LEDGER_BAD.
const canaryScenario = `name: canary
operation:
  method: POST
  path: /pay
  headers: {Authorization: 'Bearer {{env "API_TOKEN"}}', X-Api-Key: '{{env "API_TOKEN"}}'}
  key: {header: Idempotency-Key}
  body: '{"amount": 100, "note": "{{env "API_TOKEN"}}"}'
load: {ops: 12, concurrency: 2}
retry: {attempts: 2, backoff: {initial: 1ms, max: 2ms}}
response:
  fields: {seen: $.seen}
quiet: 1ms
oracles:
  - name: ledger_http
    effects:
      bulk: {path: '/counts?private_token={{env "API_TOKEN"}}&x-api-key={{env "API_TOKEN"}}&session={{env "API_TOKEN"}}', value: "$.counts"}
invariants:
  - {check: exactly_once, oracle: ledger_http}
`

// canaryStoreOracles are oracles whose database URLs, from the
// environment, carry the secret and cannot be reached (or do not parse):
// each stops its run before the load, and says why without the secret.
var canaryStoreOracles = map[string]string{
	"ledger_sql": `    effects:
      sql:
        url: '{{env "LEDGER_URL"}}'
        grouped: SELECT idempotency_key, count(*) FROM payments GROUP BY 1`,
	"store": `    effects:
      redis:
        url: '{{env "STORE_URL"}}'
        pattern: 'resp:%s'
        mode: exists`,
	"store_bad": `    effects:
      redis:
        url: '{{env "STORE_BAD"}}'
        pattern: 'resp:%s'`,
	"ledger_bad": `    effects:
      sql:
        url: '{{env "LEDGER_BAD"}}'
        grouped: SELECT idempotency_key, count(*) FROM payments GROUP BY 1`,
}

// canaryWith is the canary scenario with one more oracle, judged by
// exactly_once too.
func canaryWith(name, oracle string) string {
	s := strings.Replace(canaryScenario, "invariants:\n", "  - name: "+name+"\n"+oracle+"\ninvariants:\n", 1)
	return s + "  - {check: exactly_once, oracle: " + name + "}\n"
}

// canaryServer charges once per key, reflecting everything it was sent
// (its path, Authorization, X-Api-Key, the body) into its answers: into
// the 201s (the scenario keeps it as a field) and into a 500 error page
// for every third key's first attempt. Once it has charged, it answers its
// ledger reads with a 500 that names the URL it was asked for, query and
// all, and the credentials, so the oracle's error after the load carries
// them (before the load it answers them, so that the load is sent).
func canaryServer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		reflected := fmt.Sprintf("%s %s %s %s %s", r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), body)
		if strings.HasSuffix(r.URL.Path, "/counts") {
			if len(seen) == 0 {
				io.WriteString(w, `{"counts":{}}`)
				return
			}
			http.Error(w, "ledger down for "+reflected, http.StatusInternalServerError)
			return
		}
		if r.Method == http.MethodGet { // the preflight
			return
		}
		key := r.Header.Get("Idempotency-Key")
		seen[key]++
		if len(seen)%3 == 0 && seen[key] == 1 {
			http.Error(w, "cannot charge: "+reflected, http.StatusInternalServerError)
			return
		}
		status := http.StatusCreated
		if seen[key] > 1 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"id": "ch_" + key, "seen": reflected})
	}))
	t.Cleanup(s.Close)
	return s
}

// TestCanarySecretNeverOutput plants one secret in the target URL's
// userinfo and a segment of its base path (with --redact-path), a header
// and the body (through {{env}}), in the HTTP, Postgres and Redis oracle
// URLs (parseable or not), against a server that reflects all of it into
// its 201 answers, its 500 error pages and its oracle errors; it runs
// every report format with --out and looks for the secret in stdout,
// stderr and every file written.
func TestCanarySecretNeverOutput(t *testing.T) {
	t.Parallel()
	closed := closedAddr(t) // nothing listens: the SQL and Redis oracles fail to connect
	env := map[string]string{
		"API_TOKEN":  canarySecret,
		"LEDGER_URL": "Postgres://app:" + canarySecret + "@" + closed + "/ledger?sslmode=disable&password=" + canarySecret + "&private_token=" + canarySecret,
		"STORE_URL":  "REDIS://:" + canarySecret + "@" + closed + "/0?session=" + canarySecret,
		"STORE_BAD":  "redis://:p%zz" + canarySecret + "@" + closed + "/0",
		"LEDGER_BAD": "postgres://app:" + canarySecret + "@" + closed + ":x/ledger",
	}
	// A server per run: each one's ledger answers until its load begins.
	target := func() string {
		return strings.Replace(canaryServer(t).URL, "http://", "http://bob:"+canarySecret+"@", 1) + "/tenant/" + canarySecret
	}
	scenario := writeScenario(t, canaryScenario)
	for _, format := range []string{"text", "json", "markdown", "junit"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			r := runMain(t, env, "run", scenario, "--target", target(), "--redact-path", "--seed", "1", "--format", format, "--out", dir)
			if r.code != ExitInconclusive {
				t.Errorf("run with unreadable oracles: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, ExitInconclusive, r.out, r.err)
			}
			// the oracles did fail, so their URLs were written somewhere
			if !strings.Contains(strings.ReplaceAll(r.out+r.err, `\_`, "_"), "ledger_http") {
				t.Errorf("the report does not name the failed oracle:\n%s%s", r.out, r.err)
			}
			noCanary(t, "stdout", r.out)
			noCanary(t, "stderr", r.err)
			files := noCanaryIn(t, dir)
			if files < 2 {
				t.Errorf("--out %s: %d files; want report.json and history.jsonl", dir, files)
			}
			// The reflections were recorded (masked): the test saw them.
			hist, _ := os.ReadFile(filepath.Join(dir, "history.jsonl"))
			for _, want := range []string{"cannot charge: /xxxxx/xxxxx/pay", "ledger down for", `"seen":"/xxxxx/xxxxx/pay`} {
				if !strings.Contains(string(hist), want) {
					t.Errorf("history.jsonl has no %q: the server's reflections were not recorded, so the test proves nothing", want)
				}
			}
		})
	}
	// An oracle whose database cannot be read stops the run before its
	// load (exit 4), and the message never holds the secret.
	for name, oracle := range canaryStoreOracles {
		dir := t.TempDir()
		r := runMain(t, env, "run", writeScenario(t, canaryWith(name, oracle)), "--target", target(), "--redact-path", "--seed", "1", "--out", dir)
		if r.code != ExitRuntime && r.code != ExitUsage {
			t.Errorf("oracle %s unreachable before the load: exit %d, want %d or %d\n%s", name, r.code, ExitRuntime, ExitUsage, r.err)
		}
		noCanary(t, name+": stdout", r.out)
		noCanary(t, name+": stderr", r.err)
		noCanaryIn(t, dir)
	}
	// Without --redact-path the base path is shown, as it names the API:
	// a secret in a path is masked on request only.
	dir := t.TempDir()
	r := runMain(t, env, "run", scenario, "--target", target(), "--seed", "1", "--format", "json", "--out", dir)
	if !strings.Contains(r.out, "/tenant/"+canarySecret) {
		t.Errorf("run without --redact-path: the report does not show the target's path")
	}
}

// noCanaryIn looks for the canary in every file under dir and returns how
// many files it read.
func noCanaryIn(t *testing.T, dir string) int {
	t.Helper()
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
	if err != nil {
		t.Errorf("reading %s: %v", dir, err)
	}
	return files
}

// Bad targets are usage errors that never echo their secrets: a query,
// an unparseable URL, a bad port, another scheme.
func TestCanaryBadTarget(t *testing.T) {
	t.Parallel()
	scenario := writeScenario(t, canaryScenario)
	env := map[string]string{"API_TOKEN": "t0ken-x", "LEDGER_URL": "memory", "STORE_URL": "memory", "STORE_BAD": "memory", "LEDGER_BAD": "memory"}
	for _, target := range []string{
		"http://127.0.0.1:1/?token=" + canarySecret,
		"http://u:" + canarySecret + "@127.0.0.1:1/?private_token=" + canarySecret,
		"http://u:p%zz" + canarySecret + "@127.0.0.1:1/",
		"http://u:" + canarySecret + "@127.0.0.1:99999/",
		"ftp://u:" + canarySecret + "@127.0.0.1/",
		"http://[::1%" + canarySecret + "/",
	} {
		dir := t.TempDir()
		r := runMain(t, env, "run", scenario, "--target", target, "--out", dir)
		if r.code != ExitUsage {
			t.Errorf("run --target %s: exit %d, want %d\n%s", target, r.code, ExitUsage, r.err)
		}
		noCanary(t, "run --target …: stderr", r.err)
		noCanary(t, "run --target …: stdout", r.out)
		noCanaryIn(t, dir)
	}
}

// The lab never echoes a store or ledger URL's secrets: not when it does
// not parse (exit 2), not when its scheme is capitalised or it is a
// key=value DSN, not when it cannot connect (exit 4), not when it starts.
func TestCanaryLabFlags(t *testing.T) {
	t.Parallel()
	closed := closedAddr(t)
	for _, tc := range []struct {
		flag, value string
		code        ExitCode
	}{
		{"--ledger", "Postgres://u:" + canarySecret + "@" + closed + "/x?sslmode=disable", ExitRuntime},
		{"--ledger", "postgres://u:p%zz" + canarySecret + "@" + closed + "/x", ExitUsage},
		{"--ledger", "postgres://u:" + canarySecret + "@" + closed + ":x/db", ExitUsage},
		{"--ledger", "host=127.0.0.1 port=" + strings.Split(closed, ":")[1] + " password=" + canarySecret + " connect_timeout=2", ExitRuntime},
		{"--ledger", "host=127.0.0.1 password='" + canarySecret, ExitUsage},
		{"--ledger", "mysql://u:" + canarySecret + "@h/db", ExitUsage},
		{"--store", "redis://:p%zz" + canarySecret + "@" + closed + "/0", ExitUsage},
		{"--store", "REDIS://:" + canarySecret + "@" + closed + "/0", ExitRuntime},
		{"--store", "redis://:" + canarySecret + "@" + closed + "/0?bogus=" + canarySecret, ExitUsage},
		{"--store", "memcached://u:" + canarySecret + "@h", ExitUsage},
	} {
		r := runMain(t, nil, "lab", "--listen", "127.0.0.1:0", tc.flag, tc.value)
		if r.code != tc.code {
			t.Errorf("lab %s %s: exit %d, want %d\n%s", tc.flag, tc.value, r.code, tc.code, r.err)
		}
		// a bad value shows one that works; an unreachable one, what to check
		hint := map[string]string{"--ledger": "hint: e.g. --ledger postgres://", "--store": "hint: e.g. --store redis://"}[tc.flag]
		if tc.code == ExitRuntime {
			hint = map[string]string{"--ledger": "hint: is Postgres running", "--store": "hint: is Redis running"}[tc.flag]
		}
		if !strings.Contains(r.err, hint) {
			t.Errorf("lab %s %s: no %q\n%s", tc.flag, tc.value, hint, r.err)
		}
		noCanary(t, "lab "+tc.flag+": stderr", r.err)
		noCanary(t, "lab "+tc.flag+": stdout", r.out)
	}
	if got := redact("Postgres://app:" + canarySecret + "@db/x?sslmode=disable&password=" + canarySecret); strings.Contains(got, canarySecret) || !strings.Contains(got, "sslmode=disable") {
		t.Errorf("redact(ledger URL) = %q, want the secrets masked and sslmode kept", got)
	}
	if got := redact("host=db password=" + canarySecret + " dbname=x"); strings.Contains(got, canarySecret) {
		t.Errorf("redact(DSN) = %q shows the secret", got)
	}
}

// TestCanaryProxyTarget gives proxy targets that are not http(s) URLs,
// and one it forwards to with a password and a token in its query: no
// message shows the secret.
func TestCanaryProxyTarget(t *testing.T) {
	t.Parallel()
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
