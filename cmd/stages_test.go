package cmd

import (
	"strings"
	"testing"
)

const stagedPay = `name: pay-open
operation:
  method: POST
  path: /pay
  key: {header: Idempotency-Key}
  body: '{"amount": 100}'
load:
  stages:
    - {duration: 150ms, rate: 100}
    - {duration: 150ms, rate: 200, ramp: true}
retry: {attempts: 2, backoff: {initial: 1ms, max: 5ms}}
quiet: 10ms
oracles:
  - name: ledger
    effects:
      bulk: {path: /counts, value: "$.counts"}
invariants:
  - {check: exactly_once, oracle: ledger}
`

// stagedClosed is stagedPay in the closed model.
var stagedClosed = strings.NewReplacer("pay-open", "pay-closed",
	"{duration: 150ms, rate: 100}", "{duration: 100ms, concurrency: 1}",
	"{duration: 150ms, rate: 200, ramp: true}", "{duration: 100ms, concurrency: 3}").Replace(stagedPay)

// A run in stages reports each stage, open and closed.
func TestRunStages(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, true)
	r := runMain(t, nil, "run", writeScenario(t, stagedPay), writeScenario(t, stagedClosed), "--target", srv.URL, "--seed", "7", "-q")
	if r.code != ExitOK {
		t.Fatalf("exit %d, want 0\n%s\n%s", r.code, r.out, r.err)
	}
	for _, want := range []string{
		"  stage 1 (0–0.15 s): 100 ops/s: sent ",
		"  stage 2 (0.15–0.3 s): ramp 100 → 200 ops/s: sent ",
		"  stage 1 (0–0.1 s): 1 workers: ",
		"  stage 2 (0.1–0.2 s): 3 workers: ",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("report holds no %q:\n%s", want, r.out)
		}
	}
}

// --dry-run shows the stages; --rate replaces them with a flat load as
// long as they were.
func TestDryRunStagesAndOverride(t *testing.T) {
	t.Parallel()
	sc := writeScenario(t, stagedPay)
	r := runMain(t, nil, "run", sc, "--target", "http://127.0.0.1:1", "--dry-run")
	if want := "load: for 300ms, open model in 2 stages\n  stage 1: 150ms at 100 ops/s\n  stage 2: 150ms, ramp 100 → 200 ops/s\n"; r.code != ExitOK || !strings.Contains(r.out, want) {
		t.Errorf("dry run: exit %d\n%s\nwant it to hold\n%s", r.code, r.out, want)
	}
	r = runMain(t, nil, "run", sc, "--target", "http://127.0.0.1:1", "--dry-run", "--rate", "50")
	if want := "load: for 300ms, open model at 50 ops/s\n"; r.code != ExitOK || !strings.Contains(r.out, want) {
		t.Errorf("dry run with --rate: exit %d\n%s\nwant it to hold\n%s", r.code, r.out, want)
	}
}
