package cmd

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rejecting answers 401 to every POST and reads empty counts: an API
// called without its token.
func rejecting(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"counts": map[string]int{}})
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// A run where every answer was 401 is inconclusive and says why, never met.
func TestRunEveryAnswer401IsInconclusive(t *testing.T) {
	t.Parallel()
	r := runMain(t, nil, "run", writeScenario(t, payScenario), "--target", rejecting(t), "--seed", "1")
	if r.code != ExitInconclusive {
		t.Fatalf("run against an API answering 401: exit %d, want %d\n%s%s", r.code, ExitInconclusive, r.out, r.err)
	}
	if !strings.Contains(r.out, "every answer was 401") || !strings.Contains(r.out, "credentials") {
		t.Errorf("report does not say why:\n%s", r.out)
	}
}

// An oracle reading a place where none of the run's keys shows cannot
// pass at_most_once: inconclusive, naming the oracle.
func TestRunBlindOracleIsInconclusive(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, true)
	sc := strings.Replace(payScenario, "bulk: {path: /counts, value: \"$.counts\"}", "bulk: {path: /elsewhere, value: \"$.counts\"}", 1)
	sc = strings.Replace(sc, "  - {check: exactly_once, oracle: ledger}", "  - {check: at_most_once, oracle: ledger}", 1)
	blind := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			_ = json.NewEncoder(w).Encode(map[string]any{"counts": map[string]int{"someone-else": 1}})
			return
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(blind.Close)
	r := runMain(t, nil, "run", writeScenario(t, sc), "--target", blind.URL, "--seed", "1")
	if r.code != ExitInconclusive || !strings.Contains(r.out, "sees none of this run's keys") {
		t.Errorf("run with a blind oracle: exit %d, want %d saying the oracle sees none of the keys\n%s%s", r.code, ExitInconclusive, r.out, r.err)
	}
}

// An unset {{env}} variable is a configuration error before any request.
func TestRunUnsetEnvIsUsageError(t *testing.T) {
	t.Parallel()
	hits := 0
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	t.Cleanup(s.Close)
	sc := strings.Replace(payScenario, "  key: {header: Idempotency-Key}", "  key: {header: Idempotency-Key}\n  headers: {Authorization: 'Bearer {{env \"API_TOKEN\"}}'}", 1)
	r := runMain(t, nil, "run", writeScenario(t, sc), "--target", s.URL)
	if r.code != ExitUsage || !strings.Contains(r.err, "API_TOKEN") {
		t.Errorf("run with API_TOKEN unset: exit %d, want %d naming the variable\n%s", r.code, ExitUsage, r.err)
	}
	if hits != 0 {
		t.Errorf("run with API_TOKEN unset sent %d requests, want none", hits)
	}
	r = runMain(t, map[string]string{"API_TOKEN": "t0k3n"}, "run", writeScenario(t, sc), "--target", newPayServer(t, true).URL, "--seed", "1")
	if r.code != ExitOK {
		t.Errorf("run with API_TOKEN set: exit %d, want 0\n%s%s", r.code, r.out, r.err)
	}
}

// silent answers GETs but never answers a POST.
func silent(t *testing.T) string {
	t.Helper()
	done := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"counts": map[string]int{}})
	}))
	t.Cleanup(func() { close(done); s.Close() })
	return s.URL
}

// A target that answers the preflight but never the operation ends
// within the request timeout, inconclusive.
func TestRunSilentTargetEndsInconclusive(t *testing.T) {
	t.Parallel()
	sc := strings.Replace(payScenario, "load: {ops: 60, concurrency: 4}", "load: {ops: 4, concurrency: 4}", 1)
	sc = strings.Replace(sc, "retry: {attempts: 4,", "retry: {attempts: 2,", 1)
	start := time.Now()
	// The timeout leaves the preflight, which the target answers, time to
	// be answered on a loaded machine.
	r := runMain(t, nil, "run", writeScenario(t, sc), "--target", silent(t), "--seed", "1", "--request-timeout", "1s")
	if r.code != ExitInconclusive {
		t.Fatalf("run against a silent target: exit %d, want %d\n%s%s", r.code, ExitInconclusive, r.out, r.err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("run against a silent target took %s, want it bounded by the request timeout", took)
	}
	if !strings.Contains(r.out, "no op got an answer") && !strings.Contains(r.out, "request timeout") {
		t.Errorf("report does not say why:\n%s", r.out)
	}
}

// One of several scenarios that cannot start does not hide the others'
// reports: the violation the first caught is still reported.
func TestRunLaterScenarioFailsToStart(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, false)
	bad := strings.Replace(payScenario, "name: pay", "name: needs-token", 1)
	bad = strings.Replace(bad, "  key: {header: Idempotency-Key}", "  key: {header: Idempotency-Key}\n  headers: {Authorization: 'Bearer {{env \"NO_SUCH_TOKEN\"}}'}", 1)
	r := runMain(t, nil, "run", writeScenario(t, payScenario), writeScenario(t, bad), "--target", srv.URL, "--seed", "1")
	if r.code != ExitUsage {
		t.Errorf("exit %d, want %d (the worst: a config error)", r.code, ExitUsage)
	}
	if !strings.Contains(r.out, "FAIL    exactly_once") || !strings.Contains(r.out, "needs-token") {
		t.Errorf("the first scenario's violation or the second's not-run entry is missing:\n%s\n%s", r.out, r.err)
	}
}
