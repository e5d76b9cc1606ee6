package checks

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/history"
)

func withCopy(a history.Attempt, status int) history.Attempt {
	a.Fault, a.Copies = history.FaultDuplicate, 2
	a.Answers = []history.Answer{{Copy: 2, Outcome: history.OK, Status: status}}
	return a
}

func hiddenAnswer(status int) history.Attempt {
	a := lost()
	a.Answers = []history.Answer{{Hidden: true, Outcome: history.OK, Status: status}}
	return a
}

func replayed(a history.Attempt, fault string) history.Attempt {
	a.Fault = fault
	return a
}

// counts is the part of a processes verdict the table compares.
type counts struct {
	Status                                 Status
	Checked, Violations, Refused, Expected int
	Missing, NotJudged                     int
}

func TestProcesses(t *testing.T) {
	badFirst := []history.Rejection{{Attempt: 1, Status: 400}}
	cases := []struct {
		name    string
		h       *history.History
		expect  []history.Rejection
		profile []string // in-flight statuses
		obs     *history.Reading
		want    counts
		problem string
	}{
		{"every op processed", hist(o("a", ok(201)), o("b", lost(), ok(201)), o("c", failed(), ok(201))), nil, nil, nil,
			counts{Pass, 3, 0, 0, 0, 0, 0}, ""},
		{"409 and 429 while retries remain, then processed", hist(o("a", timedOut(), ok(409), ok(429), ok(201))), nil, nil, nil,
			counts{Pass, 1, 0, 0, 0, 0, 0}, ""},
		{"a rejected first attempt, the corrected retry processed", hist(o("a", ok(400), ok(201))), badFirst, nil, nil,
			counts{Pass, 1, 0, 0, 0, 0, 0}, ""},
		{"rejected as expected, not retried", hist(o("a", ok(400)), o("b", ok(400), ok(201))), badFirst, nil, nil,
			counts{Pass, 2, 0, 0, 1, 0, 0}, ""},
		{"burnt key: the corrected retry answered 412 forever", hist(o("a", ok(400), ok(412), ok(412)), o("b", ok(201))), badFirst, nil, nil,
			counts{Fail, 2, 1, 1, 0, 0, 0}, "the corrected retry was refused"},
		{"the expected rejection with another status is a refusal", hist(o("a", ok(422), ok(201))), badFirst, nil, nil,
			counts{Fail, 1, 1, 1, 0, 0, 0}, "attempt 1 answered 422"},
		{"keys merged on a prefix: the second key refused", hist(o("prefix-1", ok(201)), o("prefix-2", ok(422))), nil, nil, nil,
			counts{Fail, 2, 1, 1, 0, 0, 0}, "never processed"},
		{"refused, then processed", hist(o("a", ok(412), ok(201))), nil, nil, nil,
			counts{Fail, 1, 1, 1, 0, 0, 0}, "a later attempt was processed"},
		{"a duplicate's copy refused", hist(o("a", withCopy(ok(201), 422))), nil, nil, nil,
			counts{Fail, 1, 1, 1, 0, 0, 0}, "(copy 2) answered 422"},
		{"a duplicate's copy in flight", hist(o("a", withCopy(ok(201), 409))), nil, nil, nil,
			counts{Pass, 1, 0, 0, 0, 0, 0}, ""},
		{"a refusal a fault hid from the client", hist(o("a", hiddenAnswer(412), ok(201))), nil, nil, nil,
			counts{Fail, 1, 1, 1, 0, 0, 0}, "hidden from the client"},
		{"the profile's in-flight 4xx while the first may run", hist(o("a", at(timedOut(), 0, 15), at(ok(400), 16, 17), at(ok(201), 30, 31))), nil, []string{"4xx"}, nil,
			counts{Pass, 1, 0, 0, 0, 0, 0}, ""},
		{"the profile's in-flight 4xx with nothing in flight", hist(o("a", at(ok(400), 0, 5))), nil, []string{"4xx"}, nil,
			counts{Fail, 1, 1, 1, 0, 0, 0}, "attempt 1 answered 400"},
		{"a later op of the key may be refused", hist(o("a", ok(201)), o("a", ok(422))), nil, nil, nil,
			counts{Pass, 1, 0, 0, 0, 0, 0}, ""},
		{"another user's op of the key is fresh", hist(ou("a", "alice", ok(201)), ou("a", "bob", ok(422))), nil, nil, nil,
			counts{Fail, 2, 1, 1, 0, 0, 0}, "refused a valid request"},
		{"replays and other payloads are other checks'", hist(o("a", ok(201), replayed(ok(422), history.FaultMismatch), replayed(ok(412), history.FaultReplay))), nil, nil, nil,
			counts{Pass, 1, 0, 0, 0, 0, 0}, ""},
		{"ended on 409, 5xx, 429, no answer: not judged", hist(o("a", ok(201)), o("b", timedOut(), ok(409)), o("c", ok(503), ok(503)), o("d", ok(429)), o("e", lost()), o("f", failed())), nil, nil, nil,
			counts{Pass, 1, 0, 0, 0, 0, 5}, ""},
		{"nothing judged", hist(o("b", timedOut(), ok(409)), o("c", ok(500)), o("e", lost())), nil, nil, nil,
			counts{Unknown, 0, 0, 0, 0, 0, 3}, ""},
		{"acknowledged with an effect", hist(o("a", ok(201)), o("b", lost())), nil, nil, effects(map[string]int{"a": 1}),
			counts{Pass, 1, 0, 0, 0, 0, 1}, ""},
		{"acknowledged with no effect", hist(o("a", ok(201)), o("b", ok(201))), nil, nil, effects(map[string]int{"a": 1}),
			counts{Fail, 2, 1, 0, 0, 1, 0}, "processed in words only"},
		{"two users acknowledged under a key, one effect", hist(ou("a", "alice", ok(201)), ou("a", "bob", ok(201))), nil, nil, effects(map[string]int{"a": 1}),
			counts{Fail, 2, 1, 0, 0, 1, 0}, "served another's answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.h.Meta.Judge.ExpectReject = c.expect
			c.h.Meta.Judge.Profile.InFlight = c.profile
			inv := history.Invariant{Check: Processes}
			if c.obs != nil {
				inv.Oracle = "ledger"
			}
			v := Check(c.h, inv, c.obs)
			got := counts{v.Status, v.Checked, v.Violations, v.Refused, v.RejectedAsExpected, v.Missing, v.NotJudged}
			if got != c.want {
				t.Fatalf("Check(processes) = %+v (%s), want %+v", got, v.Summary, c.want)
			}
			if c.problem != "" && (len(v.Examples) == 0 || !strings.Contains(v.Examples[0].Problem, c.problem)) {
				t.Errorf("Check(processes) examples = %+v, want a problem saying %q", v.Examples, c.problem)
			}
			if v.Status == Fail && len(v.Examples) != v.Violations {
				t.Errorf("Check(processes) has %d examples for %d violations", len(v.Examples), v.Violations)
			}
		})
	}
}

// The summary tells what was processed, rejected as expected, refused
// and not judged apart.
func TestProcessesSummary(t *testing.T) {
	h := hist(o("a", ok(400), ok(201)), o("b", ok(400)), o("c", ok(400), ok(412)), o("d", lost()))
	h.Meta.Judge.ExpectReject = []history.Rejection{{Attempt: 1, Status: 400}}
	v := Check(h, history.Invariant{Check: Processes}, nil)
	want := "1 of 3 operations judged were lost: 1 refused a valid request (412 ×1); 1 processed, 1 rejected as expected; 1 not judged (1 ended without an answer)"
	if v.Summary != want {
		t.Errorf("Check(processes).Summary = %q, want %q", v.Summary, want)
	}
	if e := v.Examples[0]; e.Key != "c" || len(e.Attempts) != 2 || e.Want != "the expected 400 to attempt 1, then a 2xx (processed)" {
		t.Errorf("example = %+v, want key c with its 2 attempts", e)
	}
	h = hist(o("a", ok(400), ok(201)), o("b", ok(400)))
	h.Meta.Judge.ExpectReject = []history.Rejection{{Attempt: 1, Status: 400}}
	v = Check(h, history.Invariant{Check: Processes, Oracle: "ledger"}, effects(map[string]int{"a": 1}))
	want = "2 of 2 operations judged: 1 processed (each with an effect), 1 rejected as expected, 0 refused a valid request"
	if v.Summary != want {
		t.Errorf("Check(processes).Summary = %q, want %q", v.Summary, want)
	}
	v = Check(hist(o("a", ok(201)), o("b", ok(201))), history.Invariant{Check: Processes, Oracle: "ledger"}, effects(map[string]int{"a": 1}))
	want = "1 of 2 operations judged were lost: 1 acknowledged with no effect; 1 processed (each with an effect), 0 rejected as expected"
	if v.Summary != want {
		t.Errorf("Check(processes).Summary = %q, want %q", v.Summary, want)
	}
}

// With an effects oracle named, processes reads it; an unreadable one
// leaves it Unknown, as settles.
func TestProcessesOracle(t *testing.T) {
	h := hist(o("a", ok(201)))
	bad := &history.Reading{Oracle: "ledger", Kind: history.KindEffects, Err: "down"}
	if v := Check(h, history.Invariant{Check: Processes, Oracle: "ledger"}, bad); v.Status != Unknown {
		t.Errorf("Check(processes, unreadable oracle) = %s, want unknown", v.Status)
	}
	if kind, ok := OracleKind(Processes); kind != "" || !ok || OptionalOracleKind(Processes) != history.KindEffects {
		t.Errorf("OracleKind(processes) = %q %v, optional %q; want none, an optional effects oracle", kind, ok, OptionalOracleKind(Processes))
	}
}
