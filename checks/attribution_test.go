package checks

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// A failed verdict names the faults its violating operations had, beside
// how many of all operations had them: the violating keys of a timeout
// bug all had a timeout on their first attempt, as only some others did.
// A fault that never bit is not blamed; a clean violation counts under
// "no fault"; a passing verdict and a run without faults blame nothing.
func TestAttributionBlamesTheFaultsBeforeViolations(t *testing.T) {
	drop := history.Attempt{Outcome: history.Info, Fault: "drop_ack", Err: "injected drop_ack", Bit: true}
	retried := func(first history.Attempt) []history.Attempt {
		second := ok(201)
		second.N = 2
		first.N = 1
		return []history.Attempt{first, second}
	}
	build := func(dup map[string]bool) *history.History {
		var ops []op
		counts := map[string]int{}
		for i := range 10 {
			key := fmt.Sprintf("k%d", i)
			switch {
			case i < 4: // a timeout that bit on attempt 1
				ops = append(ops, o(key, retried(tmo(true))...))
			case i < 6: // a timeout the answer beat
				ops = append(ops, o(key, tmo(false)))
			case i == 6: // a dropped ack on attempt 1
				ops = append(ops, o(key, retried(drop)...))
			default:
				ops = append(ops, o(key, ok(201)))
			}
			counts[key] = 1
			if dup[key] {
				counts[key] = 2
			}
		}
		h := hist(ops...)
		h.Meta.BitRecorded = true
		h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: ExactlyOnce, Oracle: "ledger"}}}
		h.Readings = []history.Reading{*effects(counts)}
		return h
	}
	cases := []struct {
		name string
		dup  map[string]bool
		want *Attribution
	}{
		{"every violation after a timeout", map[string]bool{"k0": true, "k1": true, "k2": true, "k3": true},
			&Attribution{Violating: 4, Ops: 10, Faults: []FaultShare{
				{Fault: "timeout", Attempt: 1, Violating: 4, All: 4},
				{Fault: "", Violating: 0, All: 5},
				{Fault: "drop_ack", Attempt: 1, Violating: 0, All: 1},
			}}},
		{"a violation without a fault, one after a timeout that never bit", map[string]bool{"k0": true, "k4": true, "k9": true},
			&Attribution{Violating: 3, Ops: 10, Faults: []FaultShare{
				{Fault: "", Violating: 2, All: 5},
				{Fault: "timeout", Attempt: 1, Violating: 1, All: 4},
				{Fault: "drop_ack", Attempt: 1, Violating: 0, All: 1},
			}}},
		{"no violation", nil, nil},
	}
	for _, c := range cases {
		j := Judge(build(c.dup), Measured{})
		v := j.Verdicts[0]
		if c.want == nil {
			if v.Status != Pass || v.Attribution != nil {
				t.Errorf("%s: %s, attribution %+v; want a pass blaming nothing", c.name, v.Status, v.Attribution)
			}
			continue
		}
		if v.Status != Fail || !reflect.DeepEqual(v.Attribution, c.want) {
			t.Errorf("%s: %s, attribution %+v\nwant fail, %+v", c.name, v.Status, v.Attribution, c.want)
		}
	}

	// Without a fault in the run there is nothing to attribute.
	h := hist(o("a", ok(201)), o("b", ok(201)))
	h.Meta.Judge = history.Judge{Invariants: []history.Invariant{{Check: AtMostOnce, Oracle: "ledger"}}}
	h.Readings = []history.Reading{*effects(map[string]int{"a": 2, "b": 1})}
	if v := Judge(h, Measured{}).Verdicts[0]; v.Status != Fail || v.Attribution != nil {
		t.Errorf("faultless run: %s, attribution %+v; want a fail blaming nothing", v.Status, v.Attribution)
	}
}

// Every checker that judges operations one by one blames its violations:
// same_response, payload_mismatch, settles and processes too.
func TestEveryPerOpCheckerBlames(t *testing.T) {
	for _, name := range Names() {
		kind, _ := OracleKind(name)
		if kind == "" {
			kind = history.KindEffects
		}
		c, v := newCheck(history.Invariant{Check: name, Oracle: "o"}, &history.Reading{Oracle: "o", Kind: kind,
			Effects: map[string]int{}, Account: &history.Account{}})
		if c == nil && name == ExactCounter {
			continue // a counter is judged whole, never per operation
		}
		if c == nil {
			t.Fatalf("%s: no checker: %s", name, v.Reason)
		}
		_, isBlamer := c.(blamer)
		if !isBlamer {
			t.Errorf("%s does not blame the faults of its violations", name)
		}
	}
}

// A load abort_on_fail stopped is judged as any other on what was sent:
// a failure stands; a judgement that finds none (the live judge saw what
// the whole run does not) is inconclusive, never met.
func TestAbortedLoadIsNeverMet(t *testing.T) {
	build := func(ofB int) *history.History {
		h := hist(o("a", ok(201)), o("b", ok(201)))
		h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: AtMostOnce, Oracle: "ledger"}}}
		h.Readings = []history.Reading{*effects(map[string]int{"a": 1, "b": ofB})}
		h.Meta.Aborted, h.Meta.AbortedAt = "at_most_once on ledger failed on ops that had ended", time.Second
		return h
	}
	if j := Judge(build(1), Measured{}); j.Result != Inconclusive || !strings.Contains(j.Why, "stopped early") {
		t.Errorf("aborted, nothing found: %s (%s), want inconclusive", j.Result, j.Why)
	}
	if j := Judge(build(2), Measured{}); j.Result != NotMet || !strings.Contains(j.Why, "stopped early") {
		t.Errorf("aborted on a duplicate: %s (%s), want not met", j.Result, j.Why)
	}
}
