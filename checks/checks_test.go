package checks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/history"
)

// Attempt builders: an answer with a status (and body fingerprint), an
// indeterminate attempt (lost ack), a failure before sending.
func ok(status int) history.Attempt {
	return history.Attempt{Outcome: history.OK, Status: status, Fingerprint: 1}
}
func okFP(status int, fp history.Fingerprint, fields map[string]string) history.Attempt {
	return history.Attempt{Outcome: history.OK, Status: status, Fingerprint: fp, Fields: fields}
}
func lost() history.Attempt {
	return history.Attempt{Outcome: history.Info, Fault: "drop_ack", Err: "connection lost"}
}
func failed() history.Attempt {
	return history.Attempt{Outcome: history.Fail, Fault: "reset", Err: "connection reset before send"}
}

type op struct {
	key, user string
	atts      []history.Attempt
}

func o(key string, atts ...history.Attempt) op { return op{key: key, atts: atts} }
func ou(key, user string, atts ...history.Attempt) op {
	return op{key: key, user: user, atts: atts}
}

// hist builds a sorted history; attempts are appended in reverse so Sort
// has work to do.
func hist(ops ...op) *history.History {
	h := &history.History{}
	for i, x := range ops {
		h.Ops = append(h.Ops, history.Op{ID: i, Key: x.key, User: x.user})
	}
	for i := len(ops) - 1; i >= 0; i-- {
		for n, a := range ops[i].atts {
			a.Op, a.N = i, n+1
			h.Attempts = append(h.Attempts, a)
		}
	}
	h.Sort()
	return h
}

func effects(m map[string]int) *history.Reading {
	return &history.Reading{Oracle: "ledger", Kind: history.KindEffects, Effects: m}
}

// brief is the part of a verdict the table tests compare.
type brief struct {
	Status                                          Status
	Checked, Violations, Indeterminate, Extra, Miss int
	Examples                                        int
}

func briefOf(v Verdict) brief {
	return brief{v.Status, v.Checked, v.Violations, v.Indeterminate, v.Extra, v.Missing, len(v.Examples)}
}

func TestEffectChecks(t *testing.T) {
	tests := []struct {
		name  string
		check string
		h     *history.History
		e     map[string]int
		want  brief
	}{
		{"at_most_once clean", AtMostOnce,
			hist(o("a", ok(201)), o("b", lost(), ok(201)), o("c", failed())),
			map[string]int{"a": 1, "b": 1}, brief{Pass, 3, 0, 0, 0, 0, 0}},
		{"at_most_once duplicate charge", AtMostOnce,
			hist(o("a", ok(201)), o("b", lost(), ok(201)), o("c", lost(), lost())),
			map[string]int{"a": 1, "b": 2, "c": 3}, brief{Fail, 3, 2, 1, 3, 0, 2}},
		{"at_most_once ignores keys of other runs", AtMostOnce,
			hist(o("a", ok(201))), map[string]int{"a": 1, "zzz": 7}, brief{Pass, 1, 0, 0, 0, 0, 0}},
		{"at_most_once nil effects is zero everywhere", AtMostOnce,
			hist(o("a", ok(201)), o("b", ok(201), ok(201))), map[string]int{"b": 1}, brief{Pass, 2, 0, 0, 0, 0, 0}},
		{"at_most_once allows a lying success", AtMostOnce,
			hist(o("a", ok(201)), o("b", ok(201))), map[string]int{"b": 1}, brief{Pass, 2, 0, 0, 0, 0, 0}},
		{"at_most_once blind to every key of the run", AtMostOnce,
			hist(o("a", ok(201))), map[string]int{}, brief{Unknown, 0, 0, 0, 0, 0, 0}},
		{"exactly_once blind to every key of the run", ExactlyOnce,
			hist(o("a", ok(201)), o("b", lost(), ok(201))), map[string]int{"zzz": 1}, brief{Unknown, 0, 0, 0, 0, 0, 0}},

		{"exactly_once lost ack applied", ExactlyOnce,
			hist(o("a", lost(), ok(201))), map[string]int{"a": 1}, brief{Pass, 1, 0, 0, 0, 0, 0}},
		{"exactly_once lost ack only, applied", ExactlyOnce,
			hist(o("a", lost(), lost())), map[string]int{"a": 1}, brief{Pass, 1, 0, 1, 0, 0, 0}},
		{"exactly_once lost ack only, not applied", ExactlyOnce,
			hist(o("a", lost())), map[string]int{}, brief{Pass, 1, 0, 1, 0, 0, 0}},
		{"exactly_once 409 forever is indeterminate", ExactlyOnce,
			hist(o("a", lost(), ok(409), ok(409))), map[string]int{"a": 1}, brief{Pass, 1, 0, 1, 0, 0, 0}},
		{"exactly_once acked with no effect", ExactlyOnce,
			hist(o("a", ok(201)), o("b", ok(201))), map[string]int{"b": 1}, brief{Fail, 2, 1, 0, 0, 1, 1}},
		{"exactly_once acked twice applied", ExactlyOnce,
			hist(o("a", lost(), ok(201))), map[string]int{"a": 2}, brief{Fail, 1, 1, 0, 1, 0, 1}},
		{"exactly_once indeterminate twice applied", ExactlyOnce,
			hist(o("a", lost(), lost())), map[string]int{"a": 2}, brief{Fail, 1, 1, 1, 1, 0, 1}},
		{"exactly_once never sent but applied", ExactlyOnce,
			hist(o("a", failed(), failed())), map[string]int{"a": 1}, brief{Fail, 1, 1, 0, 1, 0, 1}},
		{"exactly_once never sent, nothing", ExactlyOnce,
			hist(o("a", failed()), o("b")), map[string]int{}, brief{Pass, 2, 0, 0, 0, 0, 0}},
		{"exactly_once reset then acked", ExactlyOnce,
			hist(o("a", failed(), ok(201))), map[string]int{"a": 1}, brief{Pass, 1, 0, 0, 0, 0, 0}},

		// keys shared by ops: per user they are distinct operations, for one
		// user they are one operation.
		{"exactly_once shared key, two users, two effects", ExactlyOnce,
			hist(ou("a", "alice", ok(201)), ou("a", "bob", ok(201))), map[string]int{"a": 2}, brief{Pass, 1, 0, 0, 0, 0, 0}},
		{"exactly_once shared key, two users, one effect", ExactlyOnce,
			hist(ou("a", "alice", ok(201)), ou("a", "bob", ok(201))), map[string]int{"a": 1}, brief{Fail, 1, 1, 0, 0, 1, 1}},
		{"exactly_once shared key, one user, one effect", ExactlyOnce,
			hist(ou("a", "alice", ok(201)), ou("a", "alice", lost(), ok(201))), map[string]int{"a": 1}, brief{Pass, 1, 0, 0, 0, 0, 0}},
		{"exactly_once shared key, one user, two effects", ExactlyOnce,
			hist(ou("a", "alice", ok(201)), ou("a", "alice", ok(201))), map[string]int{"a": 2}, brief{Fail, 1, 1, 0, 1, 0, 1}},
		{"exactly_once shared key, one user, reset then lost", ExactlyOnce,
			hist(ou("a", "alice", failed()), ou("a", "alice", lost())), map[string]int{"a": 1}, brief{Pass, 1, 0, 1, 0, 0, 0}},
		{"exactly_once shared key, one user, never sent", ExactlyOnce,
			hist(ou("a", "alice", failed()), ou("a", "alice", failed())), map[string]int{"a": 1}, brief{Fail, 1, 1, 0, 1, 0, 1}},
		{"at_most_once shared key, two users", AtMostOnce,
			hist(ou("a", "alice", ok(201)), ou("b", "alice", ok(201)), ou("a", "bob", lost())), map[string]int{"a": 2, "b": 1}, brief{Pass, 2, 0, 1, 0, 0, 0}},
		{"at_most_once shared key, two users, three effects", AtMostOnce,
			hist(ou("a", "alice", ok(201)), ou("a", "bob", lost())), map[string]int{"a": 3}, brief{Fail, 1, 1, 1, 1, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(tt.h, history.Invariant{Check: tt.check, Oracle: "ledger"}, effects(tt.e))
			if diff := cmp.Diff(tt.want, briefOf(v)); diff != "" {
				t.Errorf("Check(%s) = %+v, want %+v (-want +got):\n%s\nsummary: %s", tt.check, briefOf(v), tt.want, diff, v.Summary)
			}
			if v.Examples == nil {
				t.Errorf("Check(%s).Examples = nil, want a non-nil slice", tt.check)
			}
			if v.Summary == "" {
				t.Errorf("Check(%s).Summary is empty", tt.check)
			}
		})
	}
}

func TestEffectExamples(t *testing.T) {
	h := hist(
		o("k0", ok(201)),
		o("k1", lost(), ok(201)),    // duplicate after a lost ack
		o("k2", ok(201)),            // lying success
		o("k3", failed(), failed()), // never sent, yet charged
		o("k4", lost()),             // indeterminate, charged twice
	)
	v := Check(h, history.Invariant{Check: ExactlyOnce, Oracle: "ledger"}, effects(map[string]int{"k0": 1, "k1": 2, "k3": 1, "k4": 2}))
	type ex struct {
		Op       int
		Key      string
		Effects  int
		Want     string
		Attempts int
		Problem  string
	}
	var got []ex
	for _, e := range v.Examples {
		got = append(got, ex{e.Op, e.Key, e.Effects, e.Want, len(e.Attempts), e.Problem})
	}
	want := []ex{
		{1, "k1", 2, "exactly 1", 2, "2 effects for one acknowledged op (1 extra)"},
		{2, "k2", 0, "exactly 1", 1, "acknowledged with 201 but no effect (a lying success)"},
		{3, "k3", 1, "exactly 0", 2, "1 effect although no attempt was sent (every attempt failed before writing)"},
		{4, "k4", 2, "0 or 1", 1, "2 effects for one op whose outcome is unknown (1 extra)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Check(exactly_once).Examples (-want +got):\n%s", diff)
	}
	if a := v.Examples[0].Attempts; a[0].Outcome != history.Info || a[1].Status != 201 || a[0].Op != 1 {
		t.Errorf("example attempts = %+v, want the lost ack then the 201 of op 1", a)
	}
	wantSummary := "4 of 5 keys broke exactly-once: 3 extra effects, 1 acknowledged op with no effect"
	if v.Summary != wantSummary {
		t.Errorf("Summary = %q, want %q", v.Summary, wantSummary)
	}

	am := Check(h, history.Invariant{Check: AtMostOnce, Oracle: "ledger"}, effects(map[string]int{"k1": 2, "k4": 3}))
	if want := "2 of 5 keys have more than one effect (3 extra)"; am.Summary != want {
		t.Errorf("Summary = %q, want %q", am.Summary, want)
	}
	if len(am.Examples) != 2 || am.Examples[0].Want != "at most 1" || am.Examples[1].Problem != "3 effects for one key (2 extra)" {
		t.Errorf("at_most_once examples = %+v", am.Examples)
	}
}

func TestSharedKeyExample(t *testing.T) {
	h := hist(ou("a", "alice", ok(201)), ou("b", "alice", ok(201)), ou("a", "bob", lost(), ok(201)), ou("a", "bob", ok(201)))
	v := Check(h, history.Invariant{Check: ExactlyOnce, Oracle: "ledger"}, effects(map[string]int{"a": 3, "b": 1}))
	if v.Status != Fail || len(v.Examples) != 1 {
		t.Fatalf("Check = %s with %d examples, want fail with 1", v.Status, len(v.Examples))
	}
	ex := v.Examples[0]
	want := Example{Op: 0, Key: "a", User: "alice", Effects: 3, Want: "exactly 2",
		Problem: "key used by 3 ops (2 users: 2 acknowledged): 3 effects, want exactly 2"}
	if diff := cmp.Diff(want, ex, cmpIgnoreAttempts); diff != "" {
		t.Errorf("Examples[0] (-want +got):\n%s", diff)
	}
	if len(ex.Attempts) != 4 {
		t.Errorf("Examples[0].Attempts = %d attempts, want the 4 of the key's 3 ops", len(ex.Attempts))
	}
}

var cmpIgnoreAttempts = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Attempts" }, cmp.Ignore())

func TestExamplesCappedAndSorted(t *testing.T) {
	var ops []op
	e := map[string]int{}
	for i := range 50 {
		k := fmt.Sprintf("k%02d", i)
		ops = append(ops, o(k, ok(201)))
		e[k] = 2
	}
	v := Check(hist(ops...), history.Invariant{Check: AtMostOnce, Oracle: "ledger"}, effects(e))
	if v.Violations != 50 || v.Extra != 50 || len(v.Examples) != MaxExamples {
		t.Fatalf("Check = violations %d extra %d examples %d, want 50 50 %d", v.Violations, v.Extra, len(v.Examples), MaxExamples)
	}
	for i, ex := range v.Examples {
		if ex.Op != i {
			t.Errorf("Examples[%d].Op = %d, want %d", i, ex.Op, i)
		}
	}
}

func TestUnknown(t *testing.T) {
	h := hist(o("a", ok(201)))
	one := int64(1)
	unsorted := &history.History{
		Ops:      []history.Op{{ID: 0, Key: "a"}, {ID: 1, Key: "b"}},
		Attempts: []history.Attempt{{Op: 1, N: 1, Outcome: history.OK, Status: 201}, {Op: 0, N: 1, Outcome: history.OK, Status: 201}},
	}
	tests := []struct {
		name   string
		h      *history.History
		inv    history.Invariant
		obs    *history.Reading
		reason string
	}{
		{"nil observation", h, history.Invariant{Check: ExactlyOnce, Oracle: "ledger"}, nil, `no observation from oracle "ledger"`},
		{"no oracle named", h, history.Invariant{Check: AtMostOnce}, nil, "at_most_once needs an oracle and names none"},
		{"oracle error", h, history.Invariant{Check: AtMostOnce, Oracle: "ledger"},
			&history.Reading{Oracle: "ledger", Err: "oracle ledger: GET /x: status 500"}, `oracle "ledger" could not read the state: oracle ledger: GET /x: status 500`},
		{"oracle error beats effects", h, history.Invariant{Check: ExactlyOnce, Oracle: "ledger"},
			&history.Reading{Oracle: "ledger", Kind: history.KindEffects, Effects: map[string]int{"a": 1}, Err: "boom"}, `oracle "ledger" could not read the state: boom`},
		{"wrong kind", h, history.Invariant{Check: ExactlyOnce, Oracle: "likes"},
			&history.Reading{Oracle: "likes", Kind: history.KindCounter, Before: &one, After: &one}, `oracle "likes" read "counter", exactly_once needs "effects"`},
		{"counter without before", h, history.Invariant{Check: ExactCounter, Oracle: "likes"},
			&history.Reading{Oracle: "likes", Kind: history.KindCounter, After: &one}, `oracle "likes" has no counter reading before and after the run`},
		{"account missing", h, history.Invariant{Check: ConditionalUpdate, Oracle: "acct"},
			&history.Reading{Oracle: "acct", Kind: history.KindAccount}, `oracle "acct" has no account reading`},
		{"empty history", &history.History{}, history.Invariant{Check: AtMostOnce, Oracle: "ledger"}, effects(nil), "the history has no ops"},
		{"nil history", nil, history.Invariant{Check: SameResponse}, nil, "the history has no ops"},
		{"unknown check", h, history.Invariant{Check: "twice"}, nil, `unknown check "twice" (want one of at_most_once, exactly_once, same_response, exact_counter, conditional_update, payload_mismatch, settles, processes, rejects_forged, ordered_apply)`},
		{"unsorted history", unsorted, history.Invariant{Check: AtMostOnce, Oracle: "ledger"}, effects(nil),
			"the history's attempts are not sorted by op and attempt number (History.Sort was not called)"},
		{"same_response with nothing acknowledged", hist(o("a", lost()), o("b", ok(500))), history.Invariant{Check: SameResponse}, nil,
			"no op received a 2xx answer; there is nothing to compare"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(tt.h, tt.inv, tt.obs)
			if v.Status != Unknown || v.Reason != tt.reason {
				t.Errorf("Check(%s) = %s %q, want unknown %q", tt.inv.Check, v.Status, v.Reason, tt.reason)
			}
			if v.Examples == nil {
				t.Errorf("Check(%s).Examples = nil, want empty", tt.inv.Check)
			}
		})
	}
}

func TestSameResponse(t *testing.T) {
	id1 := map[string]string{"id": "ch_1"}
	id2 := map[string]string{"id": "ch_2"}
	tests := []struct {
		name    string
		h       *history.History
		want    brief
		problem string
	}{
		{"replays identical", hist(
			o("a", okFP(201, 7, id1), okFP(201, 7, id1)),
			o("b", lost(), okFP(201, 8, id2)),
			o("c", okFP(201, 9, nil), ok(409), okFP(500, 3, nil), okFP(201, 9, nil)),
			o("d", lost()),
		), brief{Pass, 3, 0, 0, 0, 0, 0}, ""},
		{"other body", hist(
			o("a", okFP(201, 7, id1), okFP(201, 7, id1)),
			o("b", okFP(201, 7, id1), lost(), okFP(201, 8, id2), okFP(201, 9, id2)),
		), brief{Fail, 2, 1, 0, 0, 0, 1},
			`attempt 1 answered 201 with body 0000000000000007 but attempt 3 answered 201 with body 0000000000000008; id "ch_1" then "ch_2"`},
		{"other status", hist(
			o("a", okFP(201, 7, nil), okFP(200, 7, nil)),
		), brief{Fail, 1, 1, 0, 0, 0, 1},
			"attempt 1 answered 201 with body 0000000000000007 but attempt 2 answered 200 with body 0000000000000007"},
		{"field absent", hist(
			o("a", okFP(201, 7, id1), okFP(201, 6, nil)),
		), brief{Fail, 1, 1, 0, 0, 0, 1},
			`attempt 1 answered 201 with body 0000000000000007 but attempt 2 answered 201 with body 0000000000000006; id "ch_1" then (absent)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(tt.h, history.Invariant{Check: SameResponse}, nil)
			if diff := cmp.Diff(tt.want, briefOf(v)); diff != "" {
				t.Errorf("Check(same_response) (-want +got):\n%s\n%s", diff, v.Summary)
			}
			if tt.problem != "" && (len(v.Examples) == 0 || v.Examples[0].Problem != tt.problem) {
				t.Errorf("Check(same_response).Examples = %+v, want problem %q", v.Examples, tt.problem)
			}
		})
	}
	v := Check(hist(o("a", okFP(201, 7, id1), okFP(201, 8, id2), okFP(201, 9, nil))), history.Invariant{Check: SameResponse}, nil)
	if want := "1 of 1 op acknowledged got answers that differ from the first success (2 answers)"; v.Summary != want {
		t.Errorf("Summary = %q, want %q", v.Summary, want)
	}
	if len(v.Examples[0].Attempts) != 3 {
		t.Errorf("example attempts = %d, want 3", len(v.Examples[0].Attempts))
	}
}

func counter(before, after int64) *history.Reading {
	return &history.Reading{Oracle: "likes", Kind: history.KindCounter, Before: &before, After: &after}
}

func TestExactCounter(t *testing.T) {
	acked3 := hist(o("a", ok(200)), o("b", lost(), ok(200)), o("c", ok(200)))
	mixed := hist(o("a", ok(200)), o("b", lost()), o("c", lost(), lost()), o("d", failed()))
	tests := []struct {
		name          string
		h             *history.History
		before, after int64
		want          brief
		detail        CounterDetail
		summary       string
	}{
		{"exact", acked3, 10, 13, brief{Pass, 3, 0, 0, 0, 0, 0},
			CounterDetail{10, 13, 3, 0, 3, 3}, "likes 10 -> 13 for 3 acknowledged ops (allowed 3..3)"},
		{"counted twice", acked3, 10, 14, brief{Fail, 3, 1, 0, 1, 0, 1},
			CounterDetail{10, 14, 3, 0, 3, 3}, "likes 10 -> 14 for 3 acknowledged ops (allowed 3..3), 1 too many"},
		{"lost increment", acked3, 10, 12, brief{Fail, 3, 1, 0, 0, 1, 0},
			CounterDetail{10, 12, 3, 0, 3, 3}, "likes 10 -> 12 for 3 acknowledged ops (allowed 3..3), 1 too few"},
		{"indeterminate low end", mixed, 0, 1, brief{Pass, 4, 0, 2, 0, 0, 0},
			CounterDetail{0, 1, 1, 2, 1, 3}, "likes 0 -> 1 for 1 acknowledged and 2 indeterminate ops (allowed 1..3)"},
		{"indeterminate high end", mixed, 0, 3, brief{Pass, 4, 0, 2, 0, 0, 0},
			CounterDetail{0, 3, 1, 2, 1, 3}, "likes 0 -> 3 for 1 acknowledged and 2 indeterminate ops (allowed 1..3)"},
		{"never sent counts nothing", mixed, 0, 4, brief{Fail, 4, 1, 2, 1, 0, 1},
			CounterDetail{0, 4, 1, 2, 1, 3}, "likes 0 -> 4 for 1 acknowledged and 2 indeterminate ops (allowed 1..3), 1 too many"},
		{"below acked", mixed, 5, 5, brief{Fail, 4, 1, 2, 0, 1, 0},
			CounterDetail{5, 5, 1, 2, 1, 3}, "likes 5 -> 5 for 1 acknowledged and 2 indeterminate ops (allowed 1..3), 1 too few"},
		{"shared key, one user, counted once", hist(o("a", ok(200)), o("a", ok(200))), 0, 1, brief{Pass, 2, 0, 0, 0, 0, 0},
			CounterDetail{0, 1, 1, 0, 1, 1}, "likes 0 -> 1 for 1 acknowledged op (allowed 1..1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(tt.h, history.Invariant{Check: ExactCounter, Oracle: "likes"}, counter(tt.before, tt.after))
			if diff := cmp.Diff(tt.want, briefOf(v)); diff != "" {
				t.Errorf("Check(exact_counter) (-want +got):\n%s", diff)
			}
			if v.Counter == nil || *v.Counter != tt.detail {
				t.Errorf("Check(exact_counter).Counter = %+v, want %+v", v.Counter, tt.detail)
			}
			if v.Summary != tt.summary {
				t.Errorf("Summary = %q, want %q", v.Summary, tt.summary)
			}
		})
	}
}

func account(before, after, vb, va int64, applied ...history.Applied) *history.Reading {
	return &history.Reading{Oracle: "acct", Kind: history.KindAccount, Account: &history.Account{
		BalanceBefore: before, BalanceAfter: after, VersionBefore: vb, VersionAfter: va, Applied: applied,
	}}
}

func TestConditionalUpdate(t *testing.T) {
	stale := func() history.Attempt { return ok(409) }
	h := hist(
		o("d1", ok(200)),
		o("d2", lost(), stale()), // applied, ack lost, retry sees a stale version
		o("d3", stale()),         // lost the race
		o("d4", failed()),        // never sent
	)
	tests := []struct {
		name    string
		obs     *history.Reading
		want    brief
		summary string
	}{
		{"stale after lost ack applied", account(100, 70, 3, 5, history.Applied{Key: "d1", Amount: 10}, history.Applied{Key: "d2", Amount: 20}), brief{Pass, 4, 0, 1, 0, 0, 0},
			"balance 100 -> 70 and version 3 -> 5 match 2 applied ops totalling 30; 4 keys: 1 acknowledged, 1 indeterminate (1 applied), 1 never sent, 1 rejected"},
		{"stale after lost ack not applied", account(100, 90, 3, 4, history.Applied{Key: "d1", Amount: 10}), brief{Pass, 4, 0, 1, 0, 0, 0}, ""},
		{"other run's entries count in the arithmetic only", account(100, 85, 3, 5, history.Applied{Key: "d1", Amount: 10}, history.Applied{Key: "elsewhere", Amount: 5}), brief{Pass, 4, 0, 1, 0, 0, 0}, ""},
		{"double debit", account(100, 80, 3, 5, history.Applied{Key: "d1", Amount: 10}, history.Applied{Key: "d1", Amount: 10}), brief{Fail, 4, 1, 1, 1, 0, 1},
			"1 of 4 keys applied more than allowed (1 extra)"},
		{"balance mismatch", account(100, 80, 3, 4, history.Applied{Key: "d1", Amount: 10}), brief{Fail, 4, 0, 1, 0, 0, 0},
			"balance 100 -> 80, want 90 (100 − 10 over 1 applied op)"},
		{"version mismatch", account(100, 90, 3, 5, history.Applied{Key: "d1", Amount: 10}), brief{Fail, 4, 0, 1, 0, 0, 0},
			"version 3 -> 5, want 4 (one step per applied op)"},
		{"acked not applied", account(100, 100, 3, 3), brief{Fail, 4, 1, 1, 0, 1, 1},
			"1 op acknowledged but not applied"},
		{"never sent applied", account(100, 80, 3, 5, history.Applied{Key: "d1", Amount: 10}, history.Applied{Key: "d4", Amount: 10}), brief{Fail, 4, 1, 1, 1, 0, 1},
			"1 of 4 keys applied more than allowed (1 extra)"},
		{"stale applied twice", account(100, 50, 3, 6, history.Applied{Key: "d1", Amount: 10}, history.Applied{Key: "d3", Amount: 20}, history.Applied{Key: "d3", Amount: 20}), brief{Fail, 4, 1, 1, 2, 0, 1},
			"1 of 4 keys applied more than allowed (2 extra)"},
		// A debit answered only with a stale-version 409 must not apply.
		{"debit despite a failed precondition", account(100, 70, 3, 5, history.Applied{Key: "d1", Amount: 10}, history.Applied{Key: "d3", Amount: 20}), brief{Fail, 4, 1, 1, 1, 0, 1},
			"1 of 4 keys applied more than allowed (1 extra)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(h, history.Invariant{Check: ConditionalUpdate, Oracle: "acct"}, tt.obs)
			if diff := cmp.Diff(tt.want, briefOf(v)); diff != "" {
				t.Errorf("Check(conditional_update) (-want +got):\n%s\n%s", diff, v.Summary)
			}
			if tt.summary != "" && v.Summary != tt.summary {
				t.Errorf("Summary = %q, want %q", v.Summary, tt.summary)
			}
		})
	}
	v := Check(h, history.Invariant{Check: ConditionalUpdate, Oracle: "acct"}, account(100, 80, 3, 5, history.Applied{Key: "d1", Amount: 10}, history.Applied{Key: "d1", Amount: 10}))
	if ex := v.Examples[0]; ex.Key != "d1" || ex.Effects != 2 || ex.Want != "exactly 1" || ex.Problem != "2 applications for one acknowledged op (1 extra)" {
		t.Errorf("Examples[0] = %+v", ex)
	}
}

func TestRun(t *testing.T) {
	h := hist(o("a", okFP(201, 5, nil), okFP(201, 5, nil)), o("b", ok(201)))
	obs := map[string]*history.Reading{"ledger": effects(map[string]int{"a": 1, "b": 2})}
	got := Run(h, []history.Invariant{
		{Check: AtMostOnce, Oracle: "ledger"},
		{Check: ExactlyOnce, Oracle: "ledger"},
		{Check: SameResponse},
		{Check: ExactCounter, Oracle: "likes"},
	}, obs)
	var st []Status
	for _, v := range got {
		st = append(st, v.Status)
	}
	if want := []Status{Fail, Fail, Pass, Unknown}; !cmp.Equal(st, want) {
		t.Errorf("Run statuses = %v, want %v", st, want)
	}
}

func TestJSON(t *testing.T) {
	b, err := json.Marshal(Check(hist(o("a", ok(201))), history.Invariant{Check: AtMostOnce, Oracle: "x"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"examples":[]`) || !strings.Contains(string(b), `"status":"unknown"`) {
		t.Errorf("json = %s, want examples [] and status unknown", b)
	}
	in := account(1, 2, 3, 4, history.Applied{Key: "k", Amount: 5})
	b, err = json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out history.Reading
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, &out); diff != "" {
		t.Errorf("observation round trip (-want +got):\n%s", diff)
	}
	if want := `{"oracle":"acct","kind":"account","account":{"balance_before":1,"balance_after":2,"version_before":3,"version_after":4,"applied":[{"key":"k","amount":5}]}}`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
}

func TestNamesAndKinds(t *testing.T) {
	for _, n := range Names() {
		if _, ok := OracleKind(n); !ok {
			t.Errorf("OracleKind(%q) unknown", n)
		}
	}
	if _, ok := OracleKind("nope"); ok {
		t.Errorf("OracleKind(nope) ok, want unknown")
	}
}

// An op the API rejected every time it was asked (4xx to single sends)
// must have no effect; a 4xx to a duplicated send proves nothing.
func TestRejectedOps(t *testing.T) {
	dup := ok(409)
	dup.Fault = history.FaultDuplicate
	h := hist(o("r", ok(422)), o("d", dup), o("a", ok(201)))
	obs := &history.Reading{Oracle: "ledger", Kind: history.KindEffects, Effects: map[string]int{"r": 1, "d": 1, "a": 1}}
	v := Check(h, history.Invariant{Check: ExactlyOnce, Oracle: "ledger"}, obs)
	if v.Status != Fail || v.Violations != 1 || len(v.Examples) != 1 || v.Examples[0].Key != "r" {
		t.Fatalf("exactly_once with a rejected op applied = %+v, want a Fail naming key r only", v)
	}
	if p := v.Examples[0].Problem; !strings.Contains(p, "rejected it (422)") {
		t.Errorf("problem = %q, want it to say every answer rejected it (422)", p)
	}
	obs.Effects["r"] = 0
	if v := Check(h, history.Invariant{Check: ExactlyOnce, Oracle: "ledger"}, obs); v.Status != Pass || !strings.Contains(v.Summary, "1 rejected") {
		t.Errorf("exactly_once with the rejected op not applied = %s %q, want pass and 1 rejected", v.Status, v.Summary)
	}
}
