package checks

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

func TestDecide(t *testing.T) {
	fail := Verdict{Invariant: ExactlyOnce, Status: Fail}
	pass := Verdict{Invariant: ExactlyOnce, Status: Pass}
	unk := Verdict{Invariant: ExactlyOnce, Status: Unknown}
	slow := Threshold{Name: "p99", OK: false}
	fast := Threshold{Name: "p99", OK: true}
	cases := []struct {
		name        string
		expect      string
		vs          []Verdict
		ts          []Threshold
		interrupted bool
		want        Result
	}{
		{"held", "pass", []Verdict{pass}, []Threshold{fast}, false, Met},
		{"violated", "pass", []Verdict{fail}, nil, false, NotMet},
		{"unknown", "pass", []Verdict{pass, unk}, nil, false, Inconclusive},
		{"slow", "pass", []Verdict{pass}, []Threshold{slow}, false, NotMet},
		{"interrupted", "pass", []Verdict{pass}, nil, true, Inconclusive},
		{"interrupted and violated", "pass", []Verdict{fail}, nil, true, NotMet},
		{"caught", "violation", []Verdict{fail}, nil, false, Met},
		{"not caught", "violation", []Verdict{pass}, nil, false, NotMet},
		{"could not catch", "violation", []Verdict{unk}, nil, false, Inconclusive},
		{"nothing checked", "violation", nil, nil, false, Inconclusive},
		{"caught but slow", "violation", []Verdict{fail}, []Threshold{slow}, false, NotMet},
	}
	for _, c := range cases {
		if got, why := Decide(c.expect, c.vs, c.ts, c.interrupted); got != c.want {
			t.Errorf("Decide(%s) = %s (%s), want %s", c.name, got, why, c.want)
		}
	}
}

func TestThresholds(t *testing.T) {
	rate := 0.1
	l := history.Thresholds{P50: time.Millisecond, P99: 5 * time.Millisecond, ErrorRate: &rate}
	got := Thresholds(l, Measured{P50: time.Millisecond, P99: 5*time.Millisecond + time.Microsecond, ErrorRate: 0.1})
	if len(got) != 3 || !got[0].OK || got[1].OK || !got[2].OK {
		t.Errorf("Thresholds = %+v, want p50 ok (equal is within), p99 over by 1µs, error_rate ok", got)
	}
	if got[1].Unit != "ms" || got[1].Limit != 5 || got[2].Unit != "ratio" {
		t.Errorf("Thresholds units = %+v, want ms limits and a ratio", got)
	}
}

// Judge reads only the history: its invariants, readings and expectation.
func TestJudgeFromHistory(t *testing.T) {
	h := hist(o("k1", ok(201)), o("k2", lost(), ok(201)))
	h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: ExactlyOnce, Oracle: "ledger"}}}
	h.Readings = []history.Reading{*effects(map[string]int{"k1": 1, "k2": 2})}
	if j := Judge(h, Measured{}); j.Result != NotMet || len(j.Verdicts) != 1 || j.Verdicts[0].Status != Fail {
		t.Errorf("Judge(double charge) = %s %+v, want not_met", j.Result, j.Verdicts)
	}
	h.Readings = []history.Reading{*effects(map[string]int{"k1": 1, "k2": 1})}
	if j := Judge(h, Measured{}); j.Result != Met {
		t.Errorf("Judge(correct) = %s (%s), want met", j.Result, j.Why)
	}
	h.Meta.Judge.Expect = "violation"
	if j := Judge(h, Measured{}); j.Result != NotMet {
		t.Errorf("Judge(correct, expect violation) = %s, want not_met", j.Result)
	}
}

// A run where nothing succeeded is never met.
func TestJudgeVacuous(t *testing.T) {
	judge := history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: ExactlyOnce, Oracle: "ledger"}, {Check: SameResponse}}}
	h := hist(o("a", ok(401), ok(401)), o("b", lost(), ok(401)), o("c", ok(401)))
	h.Meta.Judge = judge
	h.Readings = []history.Reading{*effects(map[string]int{})}
	j := Judge(h, Measured{})
	if j.Result != Inconclusive || !strings.Contains(j.Why, "every answer was 401") || !strings.Contains(j.Why, "credentials") {
		t.Errorf("Judge(every answer 401) = %s (%s), want inconclusive naming 401 and the credentials", j.Result, j.Why)
	}
	// An oracle that sees none of the run's keys although ops were
	// acknowledged cannot pass at_most_once.
	h = hist(o("a", ok(201)), o("b", ok(201)))
	h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: AtMostOnce, Oracle: "ledger"}}}
	h.Readings = []history.Reading{*effects(map[string]int{"someone-else": 3})}
	if j := Judge(h, Measured{}); j.Result != Inconclusive || !strings.Contains(j.Why, "at_most_once") ||
		!strings.Contains(j.Verdicts[0].Reason, "sees none of this run's keys") {
		t.Errorf("Judge(blind oracle) = %s (%s) %+v, want inconclusive", j.Result, j.Why, j.Verdicts)
	}
	// A failure with evidence stays a failure.
	h = hist(o("a", ok(201)), o("b", lost(), ok(201)))
	h.Meta.Judge = judge
	h.Readings = []history.Reading{*effects(map[string]int{"a": 1, "b": 2})}
	if j := Judge(h, Measured{}); j.Result != NotMet {
		t.Errorf("Judge(double charge) = %s, want not_met", j.Result)
	}
	// Expecting a violation, a run where nothing was acknowledged did not
	// show that none happened.
	h = hist(o("a", ok(404)))
	h.Meta.Judge = history.Judge{Expect: "violation", Invariants: []history.Invariant{{Check: SameResponse}}}
	if j := Judge(h, Measured{}); j.Result != Inconclusive {
		t.Errorf("Judge(expect violation, all 404) = %s (%s), want inconclusive", j.Result, j.Why)
	}
}

func TestProfileFindings(t *testing.T) {
	mismatch := func(status int) history.Attempt {
		return history.Attempt{Outcome: history.OK, Status: status, Fault: history.FaultMismatch}
	}
	h := hist(o("a", ok(201), mismatch(400)), o("b", ok(201), mismatch(422)))
	h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: PayloadMismatch}},
		Profile: history.Profile{Name: "draft", Mismatch: []string{"422"}}}
	j := Judge(h, Measured{})
	if j.Result != Met || len(j.Findings) != 1 || j.Findings[0].Count != 1 || !strings.Contains(j.Findings[0].Summary, "400 ×1") {
		t.Fatalf("Judge(mismatch answered 400, draft) = %s, findings %+v; want met with one medium finding", j.Result, j.Findings)
	}
	h.Meta.Judge.FailOn = SeverityMedium
	if j := Judge(h, Measured{}); j.Result != NotMet || !strings.Contains(j.Why, "spec finding") {
		t.Errorf("Judge(--fail-on medium) = %s (%s), want not_met", j.Result, j.Why)
	}
	h.Meta.Judge.Profile = history.Profile{Name: "lenient"}
	if j := Judge(h, Measured{}); len(j.Findings) != 0 {
		t.Errorf("Judge(lenient) findings = %+v, want none", j.Findings)
	}
}

// A key an earlier run already sent is judged on its total effects: a
// correct replay (1 before, 1 after) holds, a second charge (1 before, 2
// after) is a violation. Keys the run never sent that gained effects are
// a warning.
func TestEffectsBeforeAndStrangers(t *testing.T) {
	h := hist(o("a", ok(201)), o("b", ok(201)))
	h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: ExactlyOnce, Oracle: "ledger"}}}
	h.Readings = []history.Reading{{Oracle: "ledger", Kind: history.KindEffects,
		Effects: map[string]int{"a": 1, "b": 1}, EffectsBefore: map[string]int{"a": 1},
		Strangers: 2, StrangerKeys: []string{"x1", "x2"}}}
	j := Judge(h, Measured{})
	if j.Result != Met {
		t.Errorf("Judge(a resent and replayed: 1 before, 1 after) = %s (%s), want met", j.Result, j.Why)
	}
	if len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "2 keys this run never sent") || !strings.Contains(j.Warnings[0], "x1") {
		t.Errorf("Warnings = %q, want one naming the 2 keys", j.Warnings)
	}
	h.Readings[0].Effects["a"] = 2
	if j := Judge(h, Measured{}); j.Result != NotMet {
		t.Errorf("Judge(a resent and charged again: 1 before, 2 after) = %s, want not_met", j.Result)
	}
}

// A run where few ops were acknowledged says so.
func TestThinRunWarns(t *testing.T) {
	h := hist(o("a", ok(201)), o("b", ok(401)), o("c", ok(401)))
	h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: SameResponse}}}
	j := Judge(h, Measured{})
	if len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "only 1 of 3 ops were acknowledged") {
		t.Errorf("Warnings = %q, want one saying 1 of 3 acknowledged", j.Warnings)
	}
	h = hist(o("a", ok(201)), o("b", ok(201)), o("c", ok(401)))
	h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: SameResponse}}}
	if j := Judge(h, Measured{}); len(j.Warnings) != 0 {
		t.Errorf("Warnings = %q, want none with 2 of 3 acknowledged", j.Warnings)
	}
}

// A sharded run that lost a shard was not judged whole: never met, and
// an expected violation not caught is unknown, not absent. A violation
// caught on the shards that came back stands.
func TestJudgeMissingShard(t *testing.T) {
	h := hist(o("k1", ok(201)), o("k2", lost(), ok(201)))
	h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: ExactlyOnce, Oracle: "ledger"}}}
	h.Meta.Shard = history.Shard{Count: 3, Delivered: []int{0, 2}} // "0,2 of 3"
	h.Readings = []history.Reading{*effects(map[string]int{"k1": 1, "k2": 1})}
	if j := Judge(h, Measured{}); j.Result != Inconclusive || !strings.Contains(j.Why, "shard 1 never delivered its history") {
		t.Errorf("Judge(correct, shard 1 lost) = %s (%s), want inconclusive naming shard 1", j.Result, j.Why)
	}
	h.Meta.Judge.Expect = "violation"
	if j := Judge(h, Measured{}); j.Result != Inconclusive {
		t.Errorf("Judge(expect violation, none caught, shard lost) = %s (%s), want inconclusive", j.Result, j.Why)
	}
	h.Readings = []history.Reading{*effects(map[string]int{"k1": 1, "k2": 2})}
	if j := Judge(h, Measured{}); j.Result != Met {
		t.Errorf("Judge(expect violation, caught, shard lost) = %s (%s), want met", j.Result, j.Why)
	}
	h.Meta.Judge.Expect = "pass"
	if j := Judge(h, Measured{}); j.Result != NotMet {
		t.Errorf("Judge(double charge, shard lost) = %s (%s), want not_met", j.Result, j.Why)
	}
}

// A counter read after a run that lost a shard includes that shard's
// likes: neither a pass nor a failure on it means anything.
func TestJudgeMissingShardWholeState(t *testing.T) {
	h := hist(o("k1", ok(201)), o("k2", ok(201)))
	h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: ExactCounter, Oracle: "likes"}}}
	h.Meta.Shard = history.Shard{Count: 2, Delivered: []int{0}} // "0 of 2"
	r := counter(0, 4)                                          // the lost shard's two likes too
	r.Oracle = "likes"
	h.Readings = []history.Reading{*r}
	j := Judge(h, Measured{})
	if j.Result != Inconclusive || j.Verdicts[0].Status != Unknown || !strings.Contains(j.Verdicts[0].Reason, "shard 1") {
		t.Errorf("Judge(counter, shard lost) = %s (%s) %+v, want inconclusive, the counter unknown", j.Result, j.Why, j.Verdicts)
	}
	h.Meta.Shard = history.Shard{}
	if j := Judge(h, Measured{}); j.Result != NotMet {
		t.Errorf("Judge(counter 2 over, whole run) = %s (%s), want not_met", j.Result, j.Why)
	}
}
