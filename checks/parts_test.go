package checks

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// randomHistory is a history with every kind of answer the checkers tell
// apart, keys shared between ops and users, and readings that break some
// keys: enough to make every checker fail somewhere and pass elsewhere.
//
// A clean history (one key per op, answered alike, every reading exact)
// passes every checker.
func randomHistory(r *rand.Rand, ops int, clean bool) *history.History {
	h := &history.History{Meta: history.Meta{RunID: "r", Judge: history.Judge{
		Expect: "pass",
		Invariants: []history.Invariant{
			{Check: AtMostOnce, Oracle: "fx"}, {Check: ExactlyOnce, Oracle: "fx"},
			{Check: SameResponse}, {Check: PayloadMismatch}, {Check: Settles, Oracle: "fx"},
			{Check: ExactCounter, Oracle: "n"}, {Check: ConditionalUpdate, Oracle: "acc"},
			{Check: Processes, Oracle: "fx"}, {Check: RejectsForged, Oracle: "fx"},
			{Check: OrderedApply, Oracle: "st"},
		},
		Profile: history.Profile{Name: "p", Mismatch: []string{"422"}},
		// the third attempt of an op is made invalid on purpose
		ExpectReject: []history.Rejection{{Attempt: 3, Status: 422}},
	}}}
	fx := map[string]int{}
	acc := &history.Account{BalanceBefore: 1000, VersionBefore: 1}
	var acked int64
	// ordered_apply: four ops per object; the newest acked op of each
	// object, and (not clean) a state that is sometimes older
	newest := map[string]int{}
	for id := range ops {
		key := fmt.Sprintf("k%d", r.IntN(ops*3/4+1))
		user := ""
		if clean && id%10 == 9 {
			// a forged delivery, refused with no effect
			key = fmt.Sprintf("k%d", id)
			t := time.Duration(id) * time.Millisecond
			h.Ops = append(h.Ops, history.Op{ID: id, Key: key, Check: history.CheckForged, Object: fmt.Sprintf("o%d", id/4)})
			h.Attempts = append(h.Attempts, history.Attempt{Op: id, N: 1, Outcome: history.OK, Status: 400, Intended: t, Start: t, End: t + time.Millisecond})
			continue
		}
		if clean {
			key = fmt.Sprintf("k%d", id)
			t := time.Duration(id) * time.Millisecond
			h.Ops = append(h.Ops, history.Op{ID: id, Key: key, Object: fmt.Sprintf("o%d", id/4)})
			first := history.Attempt{Op: id, N: 1, Outcome: history.OK, Status: 201, Fingerprint: 3, Intended: t, Start: t, End: t + time.Millisecond}
			if id%4 == 0 {
				// held back: it left after the next op of its object was
				// acknowledged (out of order)
				first.Sent, first.End = t+10*time.Millisecond, t+11*time.Millisecond
			}
			newest[fmt.Sprintf("o%d", id/4)] = id
			h.Attempts = append(h.Attempts,
				first,
				history.Attempt{Op: id, N: 2, Outcome: history.OK, Status: 422, Fault: history.FaultMismatch, Intended: t, Start: t, End: t + time.Millisecond})
			fx[key] = 1
			acked++
			acc.Applied = append(acc.Applied, history.Applied{Key: key, Amount: 5})
			continue
		}
		if r.IntN(8) == 0 {
			user = fmt.Sprintf("u%d", r.IntN(2))
		}
		op := history.Op{ID: id, Key: key, User: user, Object: fmt.Sprintf("o%d", id/4)}
		if r.IntN(10) == 0 {
			op.Check = history.CheckForged
		}
		h.Ops = append(h.Ops, op)
		t := time.Duration(id) * time.Millisecond
		n := 1 + r.IntN(4)
		for a := 1; a <= n; a++ {
			at := history.Attempt{Op: id, N: a, Intended: t, Start: t + time.Millisecond, End: t + time.Duration(2+r.IntN(3000))*time.Millisecond}
			switch r.IntN(9) {
			case 0:
				at.Outcome, at.Err = history.Fail, "connection refused"
			case 1:
				at.Outcome, at.Fault, at.Err = history.Info, "timeout", "timeout"
			case 2:
				at.Outcome, at.Status = history.OK, []int{409, 422, 500, 503}[r.IntN(4)]
			case 3:
				at.Outcome, at.Status, at.Fault = history.OK, []int{200, 422, 400}[r.IntN(3)], history.FaultMismatch
			case 4:
				at.Outcome, at.Status, at.Fault, at.Copies = history.OK, 201, history.FaultDuplicate, 2
				at.Answers = []history.Answer{{Copy: 2, Outcome: history.OK, Status: []int{201, 409}[r.IntN(2)], Fingerprint: history.Fingerprint(r.IntN(2))}}
			case 5:
				at.Outcome, at.Status, at.Fault = history.OK, 200, "drop_ack"
				at.Answers = []history.Answer{{Hidden: true, Outcome: history.OK, Status: 200, Fingerprint: 1}}
			default:
				at.Outcome, at.Status, at.Fingerprint = history.OK, 200, history.Fingerprint(1+r.IntN(2))
			}
			h.Attempts = append(h.Attempts, at)
		}
		if history.State(h.Attempts[len(h.Attempts)-n:]) == history.Acked && op.Check == "" {
			acked++
			newest[op.Object] = id
			if r.IntN(3) == 0 {
				newest[op.Object] = id - r.IntN(id%4+1) // sometimes an older event's state
			}
		}
		if r.IntN(3) > 0 {
			fx[key] += r.IntN(3)
		}
		if r.IntN(2) == 0 {
			acc.Applied = append(acc.Applied, history.Applied{Key: key, Amount: 5})
		}
	}
	acc.BalanceAfter = acc.BalanceBefore - 5*int64(len(acc.Applied))
	acc.VersionAfter = acc.VersionBefore + int64(len(acc.Applied))
	before, after := int64(10), 10+acked
	if !clean {
		acc.BalanceAfter += int64(r.IntN(2)) * 5
		after += int64(r.IntN(3))
	}
	h.Readings = []history.Reading{
		{Oracle: "fx", Kind: history.KindEffects, Effects: fx},
		{Oracle: "n", Kind: history.KindCounter, Before: &before, After: &after},
		{Oracle: "acc", Kind: history.KindAccount, Account: acc},
		{Oracle: "st", Kind: history.KindState, States: newest},
	}
	h.Sort()
	return h
}

// TestJudgedInPartsAsWhole: a history judged one part at a time gets the
// judgement it gets whole: every verdict, count, summary and example.
func TestJudgedInPartsAsWhole(t *testing.T) {
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 7))
		h := randomHistory(r, 20+r.IntN(300), seed%4 == 0)
		m := Measured{P99: 5 * time.Millisecond}
		want := Judge(h, m)
		for _, n := range []int{1, 2, 3, 7, 64} {
			j := NewJudger(h.Meta, h.Readings)
			for _, p := range history.Partition(h, n) {
				j.Add(p)
			}
			got := j.Judgement(m)
			if !reflect.DeepEqual(got, want) {
				for i := range want.Verdicts {
					if !reflect.DeepEqual(got.Verdicts[i], want.Verdicts[i]) {
						t.Errorf("seed %d, %d parts: %s:\n got %+v\nwant %+v", seed, n, want.Verdicts[i].Invariant, got.Verdicts[i], want.Verdicts[i])
					}
				}
				t.Fatalf("seed %d, %d parts: judgement differs:\n got %+v\nwant %+v", seed, n, got, want)
			}
		}
	}
}

// TestRandomHistoriesJudgeEveryWay keeps the property test honest: the
// random histories must pass and fail every checker, or the
// comparison above proves little.
func TestRandomHistoriesJudgeEveryWay(t *testing.T) {
	seen := map[string]map[Status]bool{}
	blamed := map[string]bool{} // a failure attributed to its ops' faults
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 7))
		h := randomHistory(r, 20+r.IntN(300), seed%4 == 0)
		for _, v := range Judge(h, Measured{}).Verdicts {
			if seen[v.Invariant] == nil {
				seen[v.Invariant] = map[Status]bool{}
			}
			seen[v.Invariant][v.Status] = true
			if a := v.Attribution; a != nil && a.Violating > 0 && a.Violating <= v.Violations {
				blamed[v.Invariant] = true
			}
		}
	}
	for _, name := range Names() {
		if !blamed[name] && name != ExactCounter {
			t.Errorf("%s never attributed a failure to its operations' faults on the random histories", name)
		}
	}
	for _, name := range Names() {
		if !seen[name][Fail] || !seen[name][Pass] {
			t.Errorf("%s did not both pass and fail on the random histories: %v", name, seen[name])
		}
	}
}
