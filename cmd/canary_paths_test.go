package cmd

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/trial"
)

// The secrets of TestCanaryEveryPath, each planted where a user puts one:
//
//	canarySecret  the target URL's password (bob:…@), sent as Basic
//	canaryToken   API_TOKEN: headers, a path segment and a query value of
//	              the operation and of an oracle, the body; it holds "/"
//	              and ":", so that its URL- and JSON-escaped forms differ
//	canarySess    SESS: a Cookie and a ;jsessionid= matrix parameter (a
//	              name that does not look secret, a value of 8 and more)
//	canaryTenant  TENANT: a header and a body field (likewise)
//	canarySigning SIGNING_SECRET: a signature header
//
// and testRunKey, a sharded run's IDEMCHECK_RUN_KEY.
const (
	canaryToken   = "Cn4ry/T0k:9Qz"
	canarySess    = "J5e55ionCanary8x"
	canaryTenant  = "T3nantCanaryZw"
	canarySigning = "S1gn1ngCanaryKq"
)

// canaryEnv is the environment of every command of TestCanaryEveryPath.
func canaryEnv() map[string]string {
	return map[string]string{
		"API_TOKEN": canaryToken, "SESS": canarySess, "TENANT": canaryTenant, "SIGNING_SECRET": canarySigning,
		trial.RunKeyEnv: testRunKey,
	}
}

// canaryForms are the ways each planted secret can be written: raw,
// base64 (of the secret, and of user:secret as Basic sends it),
// URL-escaped (query and path) and JSON-escaped (with and without HTML
// escaping, and with "\/").
func canaryForms() map[string]string {
	forms := map[string]string{}
	add := func(name, s string) {
		if len(s) >= 6 {
			forms[s] = name
		}
	}
	for _, s := range []string{canarySecret, canaryToken, canarySess, canaryTenant, canarySigning, testRunKey} {
		add("raw", s)
		add("query-escaped", url.QueryEscape(s))
		add("path-escaped", url.PathEscape(s))
		var plain bytes.Buffer
		enc := json.NewEncoder(&plain)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		j := strings.Trim(strings.TrimSpace(plain.String()), `"`)
		add("JSON-escaped", j)
		add("JSON-escaped", strings.ReplaceAll(j, "/", `\/`))
		h, _ := json.Marshal(s)
		add("JSON-escaped (HTML)", strings.Trim(string(h), `"`))
		for _, b := range []string{s, "bob:" + s, "u:" + s, "app:" + s, ":" + s} {
			add("base64 of "+strings.Replace(b, s, "the secret", 1), strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(b)), "="))
			add("base64url of "+strings.Replace(b, s, "the secret", 1), strings.TrimRight(base64.URLEncoding.EncodeToString([]byte(b)), "="))
		}
	}
	return forms
}

var canaryFormsOnce = sync.OnceValue(canaryForms)

// noSecret fails t when text, from where, holds a planted secret in any
// of its forms.
func noSecret(t *testing.T, where, text string) {
	t.Helper()
	forms := canaryFormsOnce()
	keys := make([]string, 0, len(forms))
	for f := range forms {
		keys = append(keys, f)
	}
	sort.Strings(keys)
	for _, f := range keys {
		if i := strings.Index(text, f); i >= 0 {
			t.Errorf("%s shows a secret (%s): …%q…", where, forms[f], text[max(i-100, 0):min(i+len(f)+30, len(text))])
			return
		}
	}
}

// noSecretIn looks for the planted secrets in every file under dir and
// returns how many files it read.
func noSecretIn(t *testing.T, where, dir string) int {
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
		noSecret(t, where+": "+filepath.Base(path), string(b))
		return nil
	})
	if err != nil {
		t.Errorf("%s: reading %s: %v", where, dir, err)
	}
	return files
}

// noSecretOut checks a command's streams.
func noSecretOut(t *testing.T, where string, r result) {
	t.Helper()
	noSecret(t, where+": stdout", r.out)
	noSecret(t, where+": stderr", r.err)
}

// reflect is everything r carried, as a reflecting server echoes it: the
// URL whole (path, matrix parameters, query, raw and decoded), every
// header and the body.
func reflectRequest(r *http.Request, body []byte) string {
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s?%s q=%v", r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.URL.Query())
	for _, k := range names {
		fmt.Fprintf(&b, " %s: %s", k, strings.Join(r.Header[k], ", "))
	}
	if u, p, ok := r.BasicAuth(); ok {
		fmt.Fprintf(&b, " basic %s:%s", u, p)
	}
	fmt.Fprintf(&b, " body %s", body)
	return b.String()
}

// reflectHeaders echoes the request's credentials in the answer's
// headers, where --http-debug prints them.
func reflectHeaders(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
	w.Header().Set("X-Echo-Cookie", r.Header.Get("Cookie"))
	w.Header().Set("X-Echo-Sig", r.Header.Get("X-Signature"))
	w.Header().Set("X-Echo-Tenant", r.Header.Get("X-Tenant"))
	w.Header().Set("X-Echo-Url", r.URL.String())
}

// wideServer charges once per key and reflects every request whole: in
// its 201s (a JSON field the scenario keeps, an api_key= member), in a 500
// for every third key's first attempt, in a 400 for a request without a
// key (the audit's probes), in its answer headers, and, once it charged,
// in a 500 to its ledger reads (before the load it answers them).
func wideServer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		reflected := reflectRequest(r, body)
		reflectHeaders(w, r)
		if strings.Contains(r.URL.Path, "/counts") {
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
		if key == "" {
			http.Error(w, "missing key: "+reflected, http.StatusBadRequest)
			return
		}
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
		json.NewEncoder(w).Encode(map[string]any{"id": "ch_" + key, "seen": reflected, "api_key": r.URL.Query().Get("api_key"),
			"url": "api_key=" + r.URL.Query().Get("api_key")})
	}))
	t.Cleanup(s.Close)
	return s
}

// wideScenario sends every planted secret: in headers (credentials and
// not), the path (a matrix parameter, a query value), the body, and an
// oracle's path segment, matrix parameter and query, whose reads fail
// after the load with an error page that reflects them.
const wideScenario = `name: canary-wide
operation:
  method: POST
  path: '/pay;jsessionid={{env "SESS"}}?api_key={{env "API_TOKEN"}}'
  headers:
    Authorization: 'Bearer {{env "API_TOKEN"}}'
    X-Api-Key: '{{env "API_TOKEN"}}'
    Cookie: 'session={{env "SESS"}}'
    X-Signature: '{{env "SIGNING_SECRET"}}'
    X-Tenant: '{{env "TENANT"}}'
  key: {header: Idempotency-Key}
  body: '{"amount": 100, "note": "{{env "API_TOKEN"}}", "tenant": "{{env "TENANT"}}"}'
load: {ops: 12, concurrency: 2}
retry: {attempts: 2, backoff: {initial: 1ms, max: 2ms}}
response:
  fields: {seen: $.seen, api_key: $.api_key}
quiet: 1ms
oracles:
  - name: ledger_http
    effects:
      bulk: {path: '/{{env "API_TOKEN"}}/counts;jsessionid={{env "SESS"}}?private_token={{env "API_TOKEN"}}', value: "$.counts"}
invariants:
  - {check: exactly_once, oracle: ledger_http}
`

// wideTarget is srv's URL with the Basic credentials bob:canarySecret.
func wideTarget(srv *httptest.Server) string {
	return strings.Replace(srv.URL, "http://", "http://bob:"+canarySecret+"@", 1)
}

// TestCanaryEveryPath sends the planted secrets through every command and
// output of idemcheck to servers that reflect them, and looks for each
// secret in every form (canaryForms) in every stream and every file: run
// (every format on stdout and as --report, --out, --http-debug,
// --dry-run), check of the saved run, audit (every format, --out),
// bench overhead, a sharded run's files (manifest.json, before.json,
// shards) with IDEMCHECK_RUN_KEY, the HTTP proxy and bench store's
// messages.
func TestCanaryEveryPath(t *testing.T) {
	t.Parallel()
	env := canaryEnv()
	scenario := writeScenario(t, wideScenario)
	formats := []string{"text", "json", "markdown", "junit", "html"}
	reportArgs := func(dir string) []string {
		var args []string
		for _, f := range formats {
			args = append(args, "--report", f+"="+filepath.Join(dir, "report-"+f))
		}
		return args
	}

	t.Run("run", func(t *testing.T) {
		t.Parallel()
		for _, format := range formats {
			for _, redactPath := range []bool{true, false} {
				where := fmt.Sprintf("run --format %s (--redact-path %v)", format, redactPath)
				out, reps := t.TempDir(), t.TempDir()
				args := append([]string{"run", scenario, "--target", wideTarget(wideServer(t)), "--seed", "1", "--format", format, "--out", out}, reportArgs(reps)...)
				if redactPath {
					args = append(args, "--redact-path")
				}
				r := runMain(t, env, args...)
				if r.code != ExitInconclusive {
					t.Errorf("%s: exit %d, want %d (the oracle fails after the load)\n%s", where, r.code, ExitInconclusive, r.err)
				}
				noSecretOut(t, where, r)
				if n := noSecretIn(t, where+" --out", out); n < 3 {
					t.Errorf("%s: %d files in --out, want report.json, report.html and history.jsonl", where, n)
				}
				if n := noSecretIn(t, where+" --report", reps); n != len(formats) {
					t.Errorf("%s: %d --report files, want %d", where, n, len(formats))
				}
				// The reflections were recorded, masked: the test saw them.
				hist, _ := os.ReadFile(filepath.Join(out, "history.jsonl"))
				for _, want := range []string{"cannot charge", "ledger down for", `"seen":"POST /pay`} {
					if !strings.Contains(string(hist), want) {
						t.Errorf("%s: history.jsonl has no %q: the reflections were not recorded, so the test proves nothing", where, want)
					}
				}
				if format == "json" && redactPath {
					// check replays the saved run in every format
					for _, cf := range []string{"text", "json", "markdown", "junit", "html"} {
						noSecretOut(t, "check --format "+cf, runMain(t, env, "check", out, "--format", cf))
					}
				}
			}
		}
	})

	t.Run("http-debug", func(t *testing.T) {
		t.Parallel()
		r := runMain(t, env, "run", scenario, "--target", wideTarget(wideServer(t)), "--seed", "1", "--http-debug=100", "-q")
		// #1 is the preflight's GET; the load's POSTs follow.
		if !regexp.MustCompile(`(?m)^> #\d+ POST `).MatchString(r.err) || !strings.Contains(r.err, "X-Echo-") {
			t.Errorf("--http-debug printed no trace:\n%s", r.err)
		}
		noSecretOut(t, "run --http-debug", r)
	})

	t.Run("dry-run", func(t *testing.T) {
		t.Parallel()
		r := runMain(t, env, "run", scenario, "--target", wideTarget(wideServer(t)), "--dry-run")
		if r.code != ExitOK || !strings.Contains(r.out, "> op 0: POST") {
			t.Errorf("--dry-run: exit %d, no request shown:\n%s%s", r.code, r.out, r.err)
		}
		noSecretOut(t, "run --dry-run", r)
	})

	t.Run("audit", func(t *testing.T) {
		t.Parallel()
		for _, format := range formats {
			where := "audit --format " + format
			out, reps := t.TempDir(), t.TempDir()
			srv := wideServer(t)
			args := append([]string{"audit", "POST", wideTarget(srv) + "/pay?api_key=" + url.QueryEscape(canaryToken),
				"-H", `X-Api-Key: {{env "API_TOKEN"}}`, "-H", `Cookie: session={{env "SESS"}}`, "-H", `X-Tenant: {{env "TENANT"}}`,
				"-d", `{"amount":100,"note":"{{env "API_TOKEN"}}","tenant":"{{env "TENANT"}}"}`,
				"--checks", "C01,C03", "--format", format, "--out", out}, reportArgs(reps)...)
			r := runMain(t, env, args...)
			if r.code == ExitUsage || r.code == ExitRuntime {
				t.Errorf("%s: exit %d\n%s", where, r.code, r.err)
			}
			noSecretOut(t, where, r)
			noSecretIn(t, where+" --out", out)
			noSecretIn(t, where+" --report", reps)
			if format == "json" && !strings.Contains(r.out, "missing key") {
				t.Errorf("%s: the scorecard keeps no 4xx answer, so the test proves nothing:\n%s", where, r.out)
			}
		}
	})

	t.Run("bench overhead", func(t *testing.T) {
		t.Parallel()
		for _, format := range []string{"text", "json", "markdown"} {
			out := t.TempDir()
			srv := wideServer(t)
			args := append([]string{"bench", "overhead", "POST", wideTarget(srv) + "/pay?api_key=" + url.QueryEscape(canaryToken),
				"--baseline-path", "/pay?api_key=" + url.QueryEscape(canaryToken) + "&no_key=" + canarySess,
				"-H", `X-Api-Key: {{env "API_TOKEN"}}`, "-d", `{"note":"{{env "API_TOKEN"}}"}`, "--format", format, "--out", out,
				"--http-debug=10000"}, quickAB...)
			r := runMain(t, env, args...)
			noSecretOut(t, "bench overhead --format "+format, r)
			noSecretIn(t, "bench overhead --out", out)
		}
	})

	t.Run("sharded", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		srv := wideTarget(wideServer(t))
		steps := [][]string{
			{"run", scenario, "--phase", "prepare", "--shards", "1", "--start-in", "0s", "--seed", "5", "--target", srv, "--out", dir},
			{"run", "--phase", "load", "--shard", "0/1", "--out", dir, "--target", srv},
			{"run", "--phase", "judge", "--out", dir, "--wait", "0s", "--target", srv},
		}
		for _, args := range steps {
			r := runMain(t, env, args...)
			noSecretOut(t, strings.Join(args[:3], " "), r)
		}
		for _, f := range []string{"manifest.json", "before.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("prepare wrote no %s: %v", f, err)
			}
		}
		noSecretIn(t, "sharded run", dir)
	})

	t.Run("proxy", func(t *testing.T) {
		t.Parallel()
		up := wideServer(t)
		target := wideTarget(up) + "/?token=" + url.QueryEscape(canaryToken)
		addr := closedAddr(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var out, errb syncBuffer
		done := make(chan ExitCode, 1)
		go func() {
			done <- Main(ctx, []string{"proxy", "--listen", addr, "--target", target, "--fault", "duplicate=1", "--log", "-"},
				Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(k string) string { return canaryEnv()[k] })
		}()
		waitFor(t, func() bool {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/pay?api_key="+url.QueryEscape(canaryToken), strings.NewReader(`{"note":"`+canaryToken+`"}`))
			req.Header.Set("Idempotency-Key", "k1")
			req.Header.Set("Cookie", "session="+canarySess)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			return err == nil
		})
		cancel()
		<-done
		noSecret(t, "proxy: stderr", errb.String())
		noSecret(t, "proxy: stdout (its request log)", out.String())
		if !strings.Contains(out.String(), `"path":"/pay?api_key=`) {
			t.Errorf("proxy --log - wrote no request line:\n%s", out.String())
		}
	})

	t.Run("bench store", func(t *testing.T) {
		t.Parallel()
		closed := closedAddr(t)
		for _, args := range [][]string{
			{"--redis", "redis://:pw%zz" + canarySecret + "@" + closed + "/0"},
			{"--redis", "redis://:" + canarySecret + "@" + closed + "/0"},
			{"--postgres", "postgres://app:pw%zz" + canarySecret + "@" + closed + "/db"},
			{"--postgres", "postgres://app:" + canarySecret + "@" + closed + "/db?sslmode=disable"},
		} {
			r := runMain(t, env, append([]string{"bench", "store", "--duration", "10ms"}, args...)...)
			if r.code == ExitOK {
				t.Errorf("bench store %s: exit 0 without a store", args[1])
			}
			noSecretOut(t, "bench store "+args[0], r)
		}
	})
}

// TestCanaryPrepareRefusesLiteral: --phase prepare copies the scenario into
// manifest.json on a shared volume, so it refuses one that holds a
// literal secret (a credential header, a secret-named body field, an
// oracle's query secret), naming each field and the fix, and writes
// nothing; the secret is not echoed.
func TestCanaryPrepareRefusesLiteral(t *testing.T) {
	t.Parallel()
	literal := strings.NewReplacer("TOKEN", canaryToken, "TENANT", canaryTenant).Replace(`name: canary-literal
operation:
  method: POST
  path: /pay
  headers:
    Authorization: 'Bearer TOKEN'
  key: {header: Idempotency-Key}
  body: '{"amount": 100, "client_secret": "TENANT"}'
load: {ops: 4, concurrency: 1}
oracles:
  - name: ledger_http
    effects:
      bulk: {path: '/counts?private_token=TOKEN', value: "$.counts"}
invariants:
  - {check: exactly_once, oracle: ledger_http}
`)
	dir := t.TempDir()
	r := runMain(t, canaryEnv(), "run", writeScenario(t, literal), "--phase", "prepare", "--shards", "1", "--start-in", "0s",
		"--target", wideTarget(wideServer(t)), "--out", dir)
	if r.code != ExitUsage {
		t.Errorf("prepare of a scenario with literal secrets: exit %d, want %d\n%s", r.code, ExitUsage, r.err)
	}
	for _, want := range []string{"operation.headers.Authorization", "operation.body", `"client_secret"`, "oracles[0].effects.bulk.path", `"private_token"`, "{{env"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("prepare's refusal does not name %q:\n%s", want, r.err)
		}
	}
	noSecretOut(t, "prepare of literal secrets", r)
	if n := noSecretIn(t, "prepare of literal secrets", dir); n != 0 {
		t.Errorf("prepare wrote %d files though it refused", n)
	}
}

// TestCanaryShortEnvWarned: a value a template reads that is too short to
// mask without blurring every output is named in a warning.
func TestCanaryShortEnvWarned(t *testing.T) {
	t.Parallel()
	sc := writeScenario(t, `name: canary-short
operation:
  method: POST
  path: '/{{env "REGION"}}/pay'
  key: {header: Idempotency-Key}
load: {ops: 1, concurrency: 1}
oracles:
  - name: ledger
    effects:
      bulk: {path: /counts, value: "$.counts"}
invariants:
  - {check: exactly_once, oracle: ledger}
`)
	r := runMain(t, map[string]string{"REGION": "eu-w"}, "run", sc, "--target", "http://127.0.0.1:1", "--dry-run")
	if r.code != ExitOK || !strings.Contains(r.err, "warning: REGION: shorter than 8 characters") {
		t.Errorf("--dry-run with a short env value: exit %d, no warning naming it:\n%s", r.code, r.err)
	}
}
