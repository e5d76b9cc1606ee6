package checks

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// orderHistory is three events of object "c" (ops 0, 1, 2), each answered
// 200 at 1 ms after it starts at id ms; held sends event id's first
// delivery at 10 ms (after the others were acknowledged), and unacked
// leaves event id without an answer.
func orderHistory(held, unacked int) *history.History {
	h := &history.History{Meta: history.Meta{Judge: history.Judge{Invariants: []history.Invariant{{Check: OrderedApply, Oracle: "st"}}}}}
	for id := range 3 {
		h.Ops = append(h.Ops, history.Op{ID: id, Key: "k" + string(rune('0'+id)), Object: "c"})
		t := time.Duration(id) * time.Millisecond
		a := history.Attempt{Op: id, N: 1, Outcome: history.OK, Status: 200, Start: t, End: t + time.Millisecond}
		if id == held {
			a.Fault, a.Bit, a.Sent, a.End = "delay", true, 10*time.Millisecond, 11*time.Millisecond
		}
		if id == unacked {
			a.Outcome, a.Status, a.Err = history.Info, 0, "timeout"
		}
		h.Attempts = append(h.Attempts, a)
	}
	h.Sort()
	return h
}

func stateOf(object string, id int) *history.Reading {
	return &history.Reading{Oracle: "st", Kind: history.KindState, States: map[string]int{object: id}}
}

// ordered_apply on hand-written histories: the newest acknowledged
// event's state (or a newer one's) passes once an event arrived late; an
// older state, no state, or another object's event fails; a run with no
// late event is unknown, never a pass.
func TestOrderedApply(t *testing.T) {
	inv := history.Invariant{Check: OrderedApply, Oracle: "st"}
	for _, c := range []struct {
		name string
		h    *history.History
		obs  *history.Reading
		want Status
		says string
	}{
		{name: "newest kept, event 0 late", h: orderHistory(0, -1), obs: stateOf("c", 2), want: Pass, says: "1 had an event first delivered after a newer one"},
		{name: "the late event overwrote", h: orderHistory(0, -1), obs: stateOf("c", 0), want: Fail, says: "holds the state of event 0, older than its event 2"},
		{name: "an unacknowledged newer event applied", h: orderHistory(0, 2), obs: stateOf("c", 2), want: Pass},
		{name: "unacknowledged newest: the acked one is the bar", h: orderHistory(0, 2), obs: stateOf("c", 0), want: Fail, says: "older than its event 1"},
		{name: "no state", h: orderHistory(0, -1), obs: &history.Reading{Oracle: "st", Kind: history.KindState, States: map[string]int{}}, want: Fail, says: "has no state"},
		{name: "another event's state", h: orderHistory(0, -1), obs: stateOf("c", 7), want: Fail, says: "not one of its events"},
		{name: "in order: untested", h: orderHistory(-1, -1), obs: stateOf("c", 2), want: Unknown, says: "never put to the test"},
		{name: "the late delivery unanswered: untested", h: func() *history.History {
			h := orderHistory(0, -1)
			h.Attempts[0].Outcome, h.Attempts[0].Status, h.Attempts[0].Err = history.Info, 0, "timeout"
			return h
		}(), obs: stateOf("c", 2), want: Unknown, says: "never put to the test"},
		{name: "the late delivery's answer hidden: tested", h: func() *history.History {
			h := orderHistory(0, -1)
			a := &h.Attempts[0]
			a.Outcome, a.Status, a.Err = history.Info, 0, "dropped ack"
			a.Answers = []history.Answer{{Hidden: true, Outcome: history.OK, Status: 200}}
			return h
		}(), obs: stateOf("c", 2), want: Pass},
		{name: "renumbered by a merge", h: func() *history.History {
			h := orderHistory(0, -1)
			h.Meta.Renumbered = true
			return h
		}(), obs: stateOf("c", 0), want: Unknown, says: "renumbered"},
		{name: "the wrong oracle kind", h: orderHistory(0, -1), obs: &history.Reading{Oracle: "st", Kind: history.KindEffects}, want: Unknown, says: `needs "state"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Check(c.h, inv, c.obs)
			if v.Status != c.want || !strings.Contains(v.Summary+v.Reason+exampleProblems(v), c.says) {
				t.Errorf("ordered_apply = %s %q (%s), want %s saying %q", v.Status, v.Summary, exampleProblems(v), c.want, c.says)
			}
			if v.Status == Fail && (len(v.Examples) == 0 || len(v.Examples[0].Attempts) == 0) {
				t.Errorf("failed without evidence: %+v", v)
			}
		})
	}
}

func exampleProblems(v Verdict) string {
	var out []string
	for _, e := range v.Examples {
		out = append(out, e.Problem)
	}
	return strings.Join(out, "; ")
}
