package checks

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// clean is a clean 201 that took ms.
func clean(ms int) history.Attempt {
	a := ok(201)
	a.End = time.Duration(ms) * time.Millisecond
	return a
}

// tmo is a timeout fault that fired before the answer (bit) or that the
// answer beat (ok 201).
func tmo(bit bool) history.Attempt {
	if bit {
		return history.Attempt{Outcome: history.Info, Fault: "timeout", Err: "injected timeout", Bit: true}
	}
	return history.Attempt{Outcome: history.OK, Status: 201, Fingerprint: 1, Fault: "timeout"}
}

// A run cannot pass on faults that never bit: it is inconclusive, naming
// the fault, the latency measured and a value that would bite. A kind
// that bit on some attempts is enough; a failure or a violation caught
// stands; a history that did not record bites is judged as before.
func TestFaultsThatNeverBit(t *testing.T) {
	build := func(expect string, recorded bool, charges int, timeouts ...history.Attempt) *history.History {
		var ops []op
		for i, a := range timeouts {
			ops = append(ops, o("t"+string(rune('a'+i)), a))
		}
		ops = append(ops, o("c1", clean(20)), o("c2", clean(20)), o("c3", clean(22)))
		h := hist(ops...)
		h.Meta.BitRecorded = recorded
		h.Meta.Judge = history.Judge{Expect: expect, Invariants: []history.Invariant{{Check: ExactlyOnce, Oracle: "ledger"}}}
		counts := map[string]int{"c1": charges, "c2": 1, "c3": 1}
		for i := range timeouts {
			counts["t"+string(rune('a'+i))] = 1
		}
		h.Readings = []history.Reading{*effects(counts)}
		return h
	}
	cases := []struct {
		name string
		h    *history.History
		want Result
		why  []string // in Why, or in a warning when the result stands
	}{
		{"pass, no timeout bit", build("pass", true, 1, tmo(false), tmo(false)), Inconclusive,
			[]string{"timeout faults never bit (2 planned, 0 bit)", "20ms (p50 of the clean attempts)", "after: 10ms (half the p50)", "0.5x"}},
		{"pass, one timeout bit", build("pass", true, 1, tmo(false), tmo(true)), Met, nil},
		{"pass, bites not recorded", build("pass", false, 1, tmo(false), tmo(false)), Met, nil},
		{"violated, no timeout bit", build("pass", true, 2, tmo(false)), NotMet, []string{"timeout faults never bit"}},
		{"violation expected, none caught, no timeout bit", build("violation", true, 1, tmo(false)), Inconclusive,
			[]string{"expected a violation", "timeout faults never bit"}},
		{"violation expected and caught, no timeout bit", build("violation", true, 2, tmo(false)), Met, []string{"timeout faults never bit"}},
		{"violation expected, none caught, a timeout bit", build("violation", true, 1, tmo(true)), NotMet, nil},
	}
	for _, c := range cases {
		j := Judge(c.h, Measured{})
		if j.Result != c.want {
			t.Errorf("%s: Judge = %s (%s), want %s", c.name, j.Result, j.Why, c.want)
			continue
		}
		said := j.Why + " | " + strings.Join(j.Warnings, " | ")
		for _, w := range c.why {
			if !strings.Contains(said, w) {
				t.Errorf("%s: Judge says %q, want it to say %q", c.name, said, w)
			}
		}
		if c.why == nil && strings.Contains(said, "never bit") {
			t.Errorf("%s: Judge says %q of faults that bit", c.name, said)
		}
	}
}

// What a calibration resolved is named beside the value that would bite.
func TestNeverBitNamesTheResolvedDeadline(t *testing.T) {
	h := hist(o("a", tmo(false)), o("b", clean(30)))
	h.Meta.BitRecorded = true
	h.Meta.Calibration = &history.Calibration{Requests: 5, Answered: 5, P50: 400 * time.Millisecond,
		Resolved: []history.Resolved{{Kind: "timeout", Param: "after", Relative: "0.5x", Value: 200 * time.Millisecond}}}
	h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: SameResponse}}}
	j := Judge(h, Measured{})
	if j.Result != Inconclusive || !strings.Contains(j.Why, "after 0.5x was 200ms") || !strings.Contains(j.Why, "after: 15ms") {
		t.Errorf("Judge = %s (%s), want inconclusive naming after 0.5x was 200ms and after: 15ms", j.Result, j.Why)
	}
}

// A duplicate that never bit on a broker says the broker kept one copy
// (JetStream's window), not the HTTP wording of copies in flight.
func TestDuplicateNeverBitOnABroker(t *testing.T) {
	dup := history.Attempt{Outcome: history.OK, Status: 200, Fault: "duplicate", Copies: 2}
	for _, c := range []struct{ target, says, not string }{
		{"nats://127.0.0.1:4222", "Nats-Msg-Id", "last-byte"},
		{"redis://127.0.0.1:6379/0", "the broker stored no message twice", "Nats-Msg-Id"},
		{"http://127.0.0.1:8080", "no two copies were in flight at once", "broker"},
	} {
		h := hist(o("a", dup), o("c1", clean(20)), o("c2", clean(20)))
		h.Meta.BitRecorded, h.Meta.Target = true, c.target
		h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: ExactlyOnce, Oracle: "ledger"}}}
		h.Readings = []history.Reading{*effects(map[string]int{"a": 1, "c1": 1, "c2": 1})}
		j := Judge(h, Measured{})
		if j.Result != Inconclusive || !strings.Contains(j.Why, c.says) || strings.Contains(j.Why, c.not) {
			t.Errorf("%s: Judge = %s (%s), want inconclusive saying %q", c.target, j.Result, j.Why, c.says)
		}
	}
}
