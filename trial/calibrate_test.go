package trial

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

// slow makes every POST of h take d.
func slow(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
			}
		}
		h.ServeHTTP(w, r)
	})
}

const relativeScenario = `name: pay
operation:
  method: POST
  path: /pay
  key: {header: Idempotency-Key}
  body: '{"amount": 100}'
load: {ops: 20, concurrency: 2}
retry: {attempts: 4, backoff: {initial: 1ms, max: 2ms}}
faults:
  - {kind: timeout, rate: 0.5, after: 0.5x}
quiet: 30ms
oracles:
  - name: ledger
    effects:
      bulk: {path: /counts, value: "$.counts"}
invariants:
  - {check: exactly_once, oracle: ledger}
`

// A relative timeout is resolved by a calibration before the load: a few
// plain requests with keys of their own, before the readings before the
// load (so their charges are not the run's), whose latency and resolved
// value the history keeps.
func TestCalibrationResolvesRelativeTimeouts(t *testing.T) {
	t.Parallel()
	c := &charges{idempotent: true, n: map[string]int{}}
	url := serve(t, slow(c, 10*time.Millisecond))
	j, err := Run(context.Background(), load(t, relativeScenario), Options{Target: url, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	cal := j.History.Meta.Calibration
	if cal == nil || cal.Requests != CalibrationRequests || cal.Answered != CalibrationRequests || cal.P50 < 10*time.Millisecond || len(cal.Resolved) != 1 {
		t.Fatalf("Meta.Calibration = %+v, want %d answered requests of 10ms or more and one resolved fault", cal, CalibrationRequests)
	}
	r := cal.Resolved[0]
	if r.Fault != 0 || r.Kind != "timeout" || r.Relative != "0.5x" || r.Value != (cal.P50/2).Round(time.Microsecond) {
		t.Errorf("Resolved = %+v, want timeout 0.5x = half the p50 %v", r, cal.P50)
	}
	if !j.History.Meta.BitRecorded || j.Judgement.Result != checks.Met {
		t.Errorf("Run = %s (%s), bit recorded %v; want met, bites recorded", j.Judgement.Result, j.Judgement.Why, j.History.Meta.BitRecorded)
	}
	for _, f := range j.Measures.Faults {
		if f.Name == "timeout" && (f.Planned == 0 || f.Bit == 0) {
			t.Errorf("timeout %d planned, %d bit: a deadline of half the latency must bite", f.Planned, f.Bit)
		}
	}
	if len(j.Judgement.Warnings) > 0 {
		t.Errorf("warnings %q: the calibration's charges must not count as strangers", j.Judgement.Warnings)
	}
	c.mu.Lock()
	keys := len(c.n)
	c.mu.Unlock()
	if keys != 20+CalibrationRequests {
		t.Errorf("the target saw %d keys, want the load's 20 and the calibration's %d", keys, CalibrationRequests)
	}
}

// A scenario without a relative parameter sends no calibration; one whose
// target answers no plain request with a 2xx cannot be calibrated, which
// is an error before the load.
func TestCalibrationOnlyWhenNeeded(t *testing.T) {
	t.Parallel()
	c := &charges{idempotent: true, n: map[string]int{}}
	url := serve(t, c)
	j, err := Run(context.Background(), load(t, strings.Replace(relativeScenario, "after: 0.5x", "after: 1s", 1)), Options{Target: url, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	keys := len(c.n)
	c.mu.Unlock()
	if j.History.Meta.Calibration != nil || keys != 20 {
		t.Errorf("a fixed timeout: calibration %+v, %d keys sent; want none and the load's 20", j.History.Meta.Calibration, keys)
	}
	if j.Judgement.Result != checks.Inconclusive || !strings.Contains(j.Judgement.Why, "timeout faults never bit") {
		t.Errorf("a 1s timeout on a fast target = %s (%s), want inconclusive: it never bit", j.Judgement.Result, j.Judgement.Why)
	}
	down := serve(t, &charges{status: http.StatusServiceUnavailable, n: map[string]int{}})
	_, err = Prepare(context.Background(), load(t, relativeScenario), Options{Target: down})
	if !errors.Is(err, ErrCalibration) || !strings.Contains(err.Error(), "503 ×5") {
		t.Errorf("Prepare(every answer 503) = %v, want ErrCalibration naming the answers", err)
	}
}

// A sharded run calibrates once, in its prepare phase: the manifest
// carries what was measured, and every shard loads with the same
// resolved deadline.
func TestShardsLoadWithThePreparedCalibration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := serve(t, slow(&charges{idempotent: true, n: map[string]int{}}, 5*time.Millisecond))
	dir := t.TempDir()
	pre, err := Prepare(ctx, load(t, relativeScenario), Options{Targets: []string{url}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := pre.Publish(dir, Plan{Spec: relativeScenario, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, lsc, err := ReadRun(ctx, []string{dir}, nil, 0, nil)
	if err != nil || got.Calibration == nil || got.Calibration.P50 != m.Calibration.P50 {
		t.Fatalf("ReadRun = %+v, %v; want the prepare phase's calibration", got.Calibration, err)
	}
	c, err := ClaimShard(dir, got, history.Shard{Index: 1, Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	h, err := LoadShard(ctx, lsc, got, c, Options{Targets: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	if cal := h.Meta.Calibration; cal == nil || len(cal.Resolved) != 1 || cal.Resolved[0].Value != m.Calibration.Resolved[0].Value {
		t.Errorf("shard's Meta.Calibration = %+v, want the manifest's %+v", cal, m.Calibration)
	}
}
