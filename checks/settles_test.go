package checks

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// at sets an attempt's send and end times, in ms from the run's start.
func at(a history.Attempt, start, end int) history.Attempt {
	a.Start, a.Intended, a.End = time.Duration(start)*time.Millisecond, time.Duration(start)*time.Millisecond, time.Duration(end)*time.Millisecond
	return a
}

func timedOut() history.Attempt {
	return history.Attempt{Outcome: history.Info, Fault: "timeout", Err: "injected timeout"}
}

func TestSettles(t *testing.T) {
	inv := history.Invariant{Check: Settles}
	withOracle := history.Invariant{Check: Settles, Oracle: "ledger"}
	cases := []struct {
		name    string
		h       *history.History
		inv     history.Invariant
		obs     *history.Reading
		want    Status
		problem string
	}{
		{"409 while in flight, then replay", hist(o("k", at(timedOut(), 0, 15), at(ok(409), 16, 17), at(ok(201), 40, 41))), inv, nil, Pass, ""},
		{"409s within the grace, retries ran out", hist(o("k", at(timedOut(), 0, 15), at(ok(409), 16, 17), at(ok(409), 900, 901))), inv, nil, Pass, ""},
		{"stuck on 409 long after the first attempt ended", hist(o("k", at(ok(502), 0, 5), at(ok(409), 100, 101), at(ok(409), 2500, 2501))), inv, nil, Fail, "stuck"},
		{"a 5xx with no effect fails closed", hist(o("k", at(ok(503), 0, 5), at(ok(503), 10, 15))), withOracle, effects(map[string]int{}), Pass, ""},
		{"charged but told 400", hist(o("k", at(ok(400), 0, 5))), withOracle, effects(map[string]int{"k": 1}), Fail, "told it failed"},
		{"charged but told 500", hist(o("k", at(ok(500), 0, 5), at(ok(500), 10, 15))), withOracle, effects(map[string]int{"k": 1}), Fail, "told it failed"},
		{"a lost answer, then an honest 503: the lost attempt may have charged", hist(o("k", at(lost(), 0, 5), at(ok(503), 10, 15))), withOracle, effects(map[string]int{"k": 1}), Pass, ""},
		{"a lost answer, then 401: the lost attempt may have charged", hist(o("k", at(lost(), 0, 5), at(ok(401), 10, 15))), withOracle, effects(map[string]int{"k": 1}), Pass, ""},
		{"another user's charge on a shared key", hist(ou("k", "alice", at(ok(201), 0, 5)), ou("k", "bob", at(ok(503), 0, 5))), withOracle, effects(map[string]int{"k": 1}), Pass, ""},
		{"charged and told nothing: indeterminate", hist(o("k", at(lost(), 0, 5))), withOracle, effects(map[string]int{"k": 1}), Pass, ""},
		{"charged and acknowledged", hist(o("k", at(ok(201), 0, 5))), withOracle, effects(map[string]int{"k": 1}), Pass, ""},
		{"a 400 without an oracle is not judged", hist(o("k", at(ok(400), 0, 5))), inv, nil, Pass, ""},
		{"unreadable oracle", hist(o("k", at(ok(400), 0, 5))), withOracle, &history.Reading{Oracle: "ledger", Kind: history.KindEffects, Err: "down"}, Unknown, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Check(c.h, c.inv, c.obs)
			if v.Status != c.want {
				t.Fatalf("Check(settles) = %s (%s), want %s", v.Status, v.Summary, c.want)
			}
			if c.problem != "" && (len(v.Examples) == 0 || !strings.Contains(v.Examples[0].Problem, c.problem)) {
				t.Errorf("Check(settles) examples = %+v, want a problem saying %q", v.Examples, c.problem)
			}
		})
	}
}

func TestSettleGraceFromHistory(t *testing.T) {
	h := hist(o("k", at(ok(502), 0, 5), at(ok(409), 700, 701)))
	if v := Check(h, history.Invariant{Check: Settles}, nil); v.Status != Pass {
		t.Fatalf("default grace 2s: %s, want pass", v.Status)
	}
	h.Meta.Judge.SettleGrace = 500 * time.Millisecond
	if v := Check(h, history.Invariant{Check: Settles}, nil); v.Status != Fail {
		t.Errorf("grace 500ms, 409 695ms after: %s, want fail", v.Status)
	}
}

// same_response judges every answer: non-2xx answers to identical
// retries, the copies of a duplicate send, and answers a fault hid.
func TestSameResponseEveryAnswer(t *testing.T) {
	hidden := func(status int, fp history.Fingerprint) history.Attempt {
		a := lost()
		a.Answers = []history.Answer{{Hidden: true, Outcome: history.OK, Status: status, Fingerprint: fp}}
		return a
	}
	dup := func(first, second int, fp1, fp2 history.Fingerprint) history.Attempt {
		a := okFP(first, fp1, nil)
		a.Copies = 2
		a.Answers = []history.Answer{{Copy: 2, Outcome: history.OK, Status: second, Fingerprint: fp2}}
		return a
	}
	cases := []struct {
		name    string
		h       *history.History
		want    Status
		problem string
	}{
		{"422 to an identical retry after a success", hist(o("k", at(okFP(201, 7, nil), 0, 5), at(okFP(422, 9, nil), 10, 12))), Fail, "identical retry after 201 answered 422"},
		{"409 long after the success", hist(o("k", at(okFP(201, 7, nil), 0, 5), at(okFP(409, 9, nil), 3000, 3001))), Fail, "still says in flight"},
		{"409 while the first runs, then a replay", hist(o("k", at(timedOut(), 0, 15), at(okFP(409, 9, nil), 16, 17), at(okFP(201, 7, nil), 40, 41))), Pass, ""},
		{"transient 503 after a success", hist(o("k", at(okFP(201, 7, nil), 0, 5), at(okFP(503, 9, nil), 10, 12))), Pass, ""},
		{"hidden answer differs from the retry's", hist(o("k", at(hidden(201, 7), 0, 5), at(okFP(200, 8, nil), 10, 12))), Fail, "hidden from the client"},
		{"hidden answer equals the retry's", hist(o("k", at(hidden(201, 7), 0, 5), at(okFP(201, 7, nil), 10, 12))), Pass, ""},
		{"duplicate copies charged twice", hist(o("k", at(dup(201, 201, 7, 8), 0, 5))), Fail, "copy 2"},
		{"duplicate copy in flight", hist(o("k", at(dup(201, 409, 7, 9), 0, 5))), Pass, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Check(c.h, history.Invariant{Check: SameResponse}, nil)
			if v.Status != c.want {
				t.Fatalf("Check(same_response) = %s (%s), want %s", v.Status, v.Summary, c.want)
			}
			if c.problem != "" && (len(v.Examples) == 0 || !strings.Contains(v.Examples[0].Problem, c.problem)) {
				t.Errorf("examples = %+v, want a problem saying %q", v.Examples, c.problem)
			}
		})
	}
}

// A replay sent on purpose after the first success gets no in-flight
// allowance: a key stored without its response answers 409 forever.
func TestSameResponseReplayIn409(t *testing.T) {
	replay := func(status int) history.Attempt {
		a := okFP(status, 9, nil)
		a.Fault = history.FaultReplay
		return a
	}
	h := hist(o("k", at(okFP(201, 7, nil), 0, 5), at(replay(409), 1500, 1501)))
	if v := Check(h, history.Invariant{Check: SameResponse}, nil); v.Status != Fail || !strings.Contains(v.Examples[0].Problem, "in flight") {
		t.Errorf("Check(replay answered 409) = %s %+v, want fail", v.Status, v.Examples)
	}
}
