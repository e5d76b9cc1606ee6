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
		// the key was not seen to settle: not judged, never settled
		{"409s within the grace, retries ran out", hist(o("k", at(timedOut(), 0, 15), at(ok(409), 16, 17), at(ok(409), 900, 901))), inv, nil, Unknown, ""},
		{"409s within the grace beside a settled op", hist(o("k", at(timedOut(), 0, 15), at(ok(409), 900, 901)), o("j", at(ok(201), 0, 5))), inv, nil, Pass, ""},
		{"stuck on 409 long after the first attempt ended", hist(o("k", at(ok(502), 0, 5), at(ok(409), 100, 101), at(ok(409), 2500, 2501))), inv, nil, Fail, "stuck"},
		{"a 5xx with no effect fails closed", hist(o("k", at(ok(503), 0, 5), at(ok(503), 10, 15))), withOracle, effects(map[string]int{}), Pass, ""},
		{"charged but told 400", hist(o("k", at(ok(400), 0, 5))), withOracle, effects(map[string]int{"k": 1}), Fail, "told it failed"},
		{"charged but told 500", hist(o("k", at(ok(500), 0, 5), at(ok(500), 10, 15))), withOracle, effects(map[string]int{"k": 1}), Fail, "told it failed"},
		// whatever its earlier attempts: the client was told it failed
		{"a lost answer, then 503, and charged", hist(o("k", at(lost(), 0, 5), at(ok(503), 10, 15))), withOracle, effects(map[string]int{"k": 1}), Fail, "told it failed"},
		{"a lost answer, then 401, and charged", hist(o("k", at(lost(), 0, 5), at(ok(401), 10, 15))), withOracle, effects(map[string]int{"k": 1}), Fail, "told it failed"},
		{"timeouts, then 422 forever, and charged", hist(o("k", at(timedOut(), 0, 15), at(ok(422), 20, 21), at(ok(422), 40, 41))), withOracle, effects(map[string]int{"k": 1}), Fail, "the final answer was 422"},
		{"another user's charge on a shared key", hist(ou("k", "alice", at(ok(201), 0, 5)), ou("k", "bob", at(ok(503), 0, 5))), withOracle, effects(map[string]int{"k": 1}), Pass, ""},
		{"charged and told nothing: not judged", hist(o("k", at(lost(), 0, 5))), withOracle, effects(map[string]int{"k": 1}), Unknown, ""},
		{"never sent: not judged", hist(o("k", at(failed(), 0, 1))), inv, nil, Unknown, ""},
		{"charged and acknowledged", hist(o("k", at(ok(201), 0, 5))), withOracle, effects(map[string]int{"k": 1}), Pass, ""},
		{"a 400 without an oracle settles (its effect is not judged)", hist(o("k", at(ok(400), 0, 5))), inv, nil, Pass, ""},
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
	h := hist(o("k", at(ok(502), 0, 5), at(ok(409), 700, 701)), o("j", at(ok(201), 0, 5)))
	if v := Check(h, history.Invariant{Check: Settles}, nil); v.Status != Pass || v.NotJudged != 1 {
		t.Fatalf("default grace 2s: %s, %d not judged, want pass, 1 not judged", v.Status, v.NotJudged)
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

// A 409 past settle_grace is a stuck key unless the server declares a
// lease that covers it: then it is not judged, and the summary names the
// lease.
func TestSettlesLease(t *testing.T) {
	h := hist(o("k", at(timedOut(), 0, 1000), at(ok(409), 1100, 1101), at(ok(409), 32000, 32001)), o("j", at(ok(201), 0, 5)))
	v := Check(h, history.Invariant{Check: Settles}, nil)
	if v.Status != Fail || !strings.Contains(v.Examples[0].Problem, "declare its lease (lease: 32s)") {
		t.Fatalf("no lease declared: %s %+v, want fail naming the lease to declare", v.Status, v.Examples)
	}
	h.Meta.Judge.Lease = 60 * time.Second
	v = Check(h, history.Invariant{Check: Settles}, nil)
	want := "1 of 2 operations judged settled: none stuck in flight, no 5xx tied to a key; 1 not judged (1 ended in flight within the declared lease); " +
		"409 for 31 s: the server's in-progress lease is at least 31 s; set settle_grace above it if that is intended"
	if v.Status != Pass || v.Summary != want || v.NotJudged != 1 {
		t.Errorf("lease 60s: %s %q, want pass %q", v.Status, v.Summary, want)
	}
	h.Meta.Judge.Lease = 10 * time.Second
	v = Check(h, history.Invariant{Check: Settles}, nil)
	if v.Status != Fail || !strings.Contains(v.Examples[0].Problem, "longer than the server's declared lease (10 s)") {
		t.Errorf("lease 10s, 409 for 31 s: %s %+v, want fail past the lease", v.Status, v.Examples)
	}
}

// The same 5xx to every attempt of an op while other keys are served is
// an error tied to the key; while nobody is served, an outage.
func TestSettlesKeyDependent5xx(t *testing.T) {
	forever := o("bad", at(ok(500), 0, 5), at(ok(500), 100, 105), at(ok(500), 300, 305))
	served := o("good", at(ok(201), 150, 160))
	v := Check(hist(forever, served), history.Invariant{Check: Settles}, nil)
	if v.Status != Fail || v.Violations != 1 || !strings.Contains(v.Examples[0].Problem, "the same 500 to every one of its 3 attempts") ||
		!strings.Contains(v.Summary, "1 with a 5xx that never cleared") {
		t.Fatalf("500 forever beside a 201: %s %q %+v, want fail", v.Status, v.Summary, v.Examples)
	}
	outage := o("good", at(ok(201), 400, 410)) // served after the retries ran out
	if v := Check(hist(forever, outage), history.Invariant{Check: Settles}, nil); v.Status != Pass {
		t.Errorf("500 while nothing was served: %s %q, want pass (an outage)", v.Status, v.Summary)
	}
	cleared := o("bad", at(ok(500), 0, 5), at(ok(503), 100, 105))
	if v := Check(hist(cleared, served), history.Invariant{Check: Settles}, nil); v.Status != Pass {
		t.Errorf("500 then 503: %s %q, want pass (not the same answer)", v.Status, v.Summary)
	}
	once := o("bad", at(ok(500), 100, 105))
	if v := Check(hist(once, served), history.Invariant{Check: Settles}, nil); v.Status != Pass {
		t.Errorf("one 500: %s %q, want pass (no retry)", v.Status, v.Summary)
	}
}

// settles says what it looked at: a run where every op was told it failed
// and charged is a failure, not "no effect behind a failure answer"; a
// run where no op ended on a failure answer does not claim it judged one.
func TestSettlesSummaryClaims(t *testing.T) {
	var ops []op
	fx := map[string]int{}
	for _, k := range []string{"a", "b", "c"} {
		ops = append(ops, o(k, at(timedOut(), 0, 15), at(ok(422), 20, 21)))
		fx[k] = 1
	}
	v := Check(hist(ops...), history.Invariant{Check: Settles, Oracle: "ledger"}, effects(fx))
	if v.Status != Fail || v.Violations != 3 {
		t.Errorf("every op charged and told 422: %s %q, want 3 violations", v.Status, v.Summary)
	}
	v = Check(hist(o("a", ok(201)), o("b", lost())), history.Invariant{Check: Settles, Oracle: "ledger"}, effects(map[string]int{"a": 1, "b": 1}))
	want := "1 of 2 operations judged settled: none stuck in flight, no 5xx tied to a key, no operation ended on a failure answer (no effect to judge behind one); 1 not judged (1 ended without an answer)"
	if v.Summary != want {
		t.Errorf("summary = %q, want %q", v.Summary, want)
	}
	v = Check(hist(o("a", ok(201)), o("b", ok(503))), history.Invariant{Check: Settles, Oracle: "ledger"}, effects(map[string]int{"a": 1}))
	want = "2 of 2 operations judged settled: none stuck in flight, no 5xx tied to a key, 1 operation ended on a failure answer with no effect behind it"
	if v.Summary != want {
		t.Errorf("summary = %q, want %q", v.Summary, want)
	}
}
