package reports

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/measure"
)

var (
	benchA      = BenchArm{Name: "a", Ops: 400, OpsPerS: 100, P50: 1.311, P90: 12.345, P99: 12.345, P999: 12.345}
	benchB      = BenchArm{Name: "b", Ops: 398, OpsPerS: 99.5, P50: 1.001, P90: 9.876, P99: 9.876, P999: 9.876}
	benchDeltas = []BenchDelta{
		{Name: "p50", MS: 0.4123, Pct: 35.46, CI: [2]float64{0.30049, 0.5251}},
		{Name: "p90", MS: 0.0123, Pct: 1.04, CI: [2]float64{-0.1, 0.2}},
		{Name: "p99", MS: 2.4689, Pct: 25.01, CI: [2]float64{1.00049, 3.9999}},
		{Name: "p999", MS: -0.5, Pct: -4.44, CI: [2]float64{-2.5, 1.5}},
	}
)

// TestBenchGolden keeps bench overhead's output as it was when it was
// written in cmd: without a budget, over one, unclear after a rate
// search, and with an arm that got no 2xx (no latency, no A − B).
func TestBenchGolden(t *testing.T) {
	what := "POST /charges (A) and POST /naive/charges (B)"
	for name, b := range map[string]*Bench{
		"nobudget": {What: what, Rate: 100, Rounds: 4, A: benchA, B: benchB, Deltas: benchDeltas, Verdict: "within"},
		"budget": {What: what, Rate: 200, Rounds: 8, A: benchA, B: benchB, Deltas: benchDeltas, Verdict: "exceeded", Findings: []BenchFinding{
			{Limit: "p50=30%", Pct: true, Verdict: "exceeded", CI: [2]float64{25.1, 45.9}},
			{Limit: "p99=5ms", Verdict: "within", CI: [2]float64{1.00049, 3.9999}},
		}},
		"unclear": {What: what, Rate: 50, Rounds: 2, A: benchA, B: benchB, Deltas: benchDeltas, Verdict: "unclear",
			Reason: "arm b sent 10 of 100 scheduled ops", MaxA: 812.4, MaxB: 1003.6},
		// --baseline-no-key against an API that requires the key: B got
		// no 2xx, so it has no latency and there is no A − B
		"no2xx": {What: "POST /charges (A) and POST /charges (B, no key)", Rate: 100, Rounds: 4, A: benchA,
			B: BenchArm{Name: "b", Ops: 400, OpsPerS: 100, No2xx: true}, Verdict: "unclear",
			Reason:  "arm b: 400 of 400 ops got no 2xx answer (first: status 400)",
			NoDelta: "arm B got no 2xx answer to any of its 400 ops (first: status 400): no latency to compare"},
	} {
		for format, write := range map[string]func(io.Writer) error{"text": b.WriteText, "markdown": b.WriteMarkdown, "json": b.WriteJSON} {
			var buf bytes.Buffer
			if err := write(&buf); err != nil {
				t.Fatal(err)
			}
			golden(t, "bench-"+name+"."+format, buf.Bytes())
		}
	}
}

func TestStoreGolden(t *testing.T) {
	redis := &StoreResult{Primitives: []StorePrimitive{
		{Name: "set_nx_px", Concurrency: 1, P50US: 51.23, P99US: 120.5, OpsPerS: 18000.4},
		{Name: "get", Concurrency: 8, P50US: 80.06, P99US: 300.04, OpsPerS: 90000.6, Errors: 3},
	}, BytesPerRecord: 612, Roundtrip: 51.23}
	both := &Store{
		Redis: redis,
		Postgres: &StoreResult{Primitives: []StorePrimitive{
			{Name: "insert_on_conflict", Concurrency: 1, P50US: 251.23, P99US: 920.5, OpsPerS: 3800.4},
		}, BytesPerRecord: 410},
		Capacity: StoreCapacity{RPS: 10000, TTLS: 86400, Records: 864000000, Bytes: 864000000 * 612, RoundtripsPerRequest: 2, StoreOpsPerS: 20000},
		RedisURL: "redis://:xxxxx@127.0.0.1:6379/0", PostgresURL: "postgres://u:xxxxx@127.0.0.1:5432/db?sslmode=disable",
		ValueSize: 256, TTL: 24 * time.Hour,
	}
	redisOnly := &Store{Redis: redis, Capacity: StoreCapacity{RPS: 100, TTLS: 3600, Records: 360000, Bytes: 360000 * 612, RoundtripsPerRequest: 2, StoreOpsPerS: 200},
		RedisURL: "redis://127.0.0.1:6379/0", ValueSize: 512, TTL: time.Hour}
	for name, write := range map[string]func(io.Writer) error{"store-both.text": both.WriteText, "store-both.json": both.WriteJSON, "store-redis.text": redisOnly.WriteText} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		golden(t, name, buf.Bytes())
	}
}

// TestDemoGolden: every verdict and every kind of evidence the demo
// prints, and its costs measured, unclear and not measured.
func TestDemoGolden(t *testing.T) {
	sum := func(name, expect string, fs []measure.FaultCount, vs []checks.Verdict) *Summary {
		return &Summary{Scenario: ScenarioInfo{Name: name, Expect: expect}, Faults: fs, Verdicts: vs}
	}
	row := func(pair, variant string, s *Summary, met, inconclusive bool, cents int64) DemoRow {
		return DemoRow{Pair: pair, Variant: variant, Summary: s, Met: met, Inconclusive: inconclusive, ChargeCents: cents}
	}
	d := &Demo{Rate: 100, Seed: 7, KeyNonce: 99, Out: "idemcheck-report", Rows: []DemoRow{
		row("charges-lost-ack", "naive", sum("charges-lost-ack-naive", "violation", []measure.FaultCount{{Name: "drop_ack", Count: 60, Planned: 60, Bit: 58}, {Name: "reset", Count: 15, Planned: 15, Bit: 15}},
			[]checks.Verdict{{Invariant: checks.SameResponse, Status: checks.Pass, Summary: "same"}, {Invariant: checks.ExactlyOnce, Oracle: "ledger", Status: checks.Fail, Checked: 300, Violations: 55, Extra: 57}}), true, false, 100),
		row("charges-lost-ack", "protected", sum("charges-lost-ack", "pass", []measure.FaultCount{{Name: "drop_ack", Count: 61, Planned: 61, Bit: 61}},
			[]checks.Verdict{{Invariant: checks.ExactlyOnce, Oracle: "ledger", Status: checks.Pass, Checked: 300, Indeterminate: 2}}), true, false, 100),
		row("charges-timeout", "naive", sum("charges-timeout-naive", "violation", nil,
			[]checks.Verdict{{Invariant: checks.AtMostOnce, Oracle: "processor", Status: checks.Fail, Checked: 300, Violations: 3, Missing: 3}}), false, false, 100),
		row("charges-timeout", "protected", sum("charges-timeout", "pass", nil,
			[]checks.Verdict{{Invariant: checks.ExactlyOnce, Oracle: "ledger", Status: checks.Fail, Checked: 300, Missing: 4}}), false, false, 100),
		row("likes-duplicate", "naive", sum("likes-duplicate-naive", "violation", []measure.FaultCount{{Name: "duplicate", Count: 30, Planned: 30, Bit: 24}},
			[]checks.Verdict{{Invariant: checks.ExactCounter, Status: checks.Fail, Counter: &checks.CounterDetail{Before: 0, After: 130, Acked: 100}}}), true, false, 0),
		row("likes-duplicate", "protected", sum("likes-duplicate", "pass", nil,
			[]checks.Verdict{{Invariant: checks.ExactCounter, Status: checks.Pass, Counter: &checks.CounterDetail{Before: 0, After: 101, Acked: 100, Indeterminate: 2}}}), true, false, 0),
		row("debit-cas", "naive", sum("debit-cas-naive", "violation", nil,
			[]checks.Verdict{{Invariant: checks.ConditionalUpdate, Status: checks.Fail, Checked: 200, Violations: 7, Extra: 9}}), true, false, 0),
		row("debit-cas", "protected", sum("debit-cas", "pass", nil,
			[]checks.Verdict{{Invariant: checks.ConditionalUpdate, Status: checks.Pass, Checked: 200}}), true, false, 0),
		row("charges-replay", "protected", sum("charges-replay", "pass", nil,
			[]checks.Verdict{{Invariant: checks.ExactlyOnce, Status: checks.Unknown, Reason: "the ledger could not be read"}}), false, true, 100),
		row("charges-same-payload", "protected", sum("charges-same-payload", "pass", nil, nil), false, false, 100),
		row("other", "protected", sum("other", "pass", nil, []checks.Verdict{{Invariant: checks.SameResponse, Status: checks.Pass, Summary: "every replay got the first answer"}}), true, false, 0),
	}, Costs: []DemoCost{
		{What: "POST /charges vs POST /naive/charges", A: &benchA, B: &benchB, Deltas: benchDeltas},
		{What: "POST /likes vs POST /naive/likes", A: &benchA, B: &benchB, Deltas: benchDeltas, Err: "arm b sent 1 of 2 ops"},
		{What: "POST /x vs POST /naive/x", Err: "no answer"},
	}}
	var buf bytes.Buffer
	if err := d.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "demo.text", buf.Bytes())
}
