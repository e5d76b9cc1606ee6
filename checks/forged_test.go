package checks

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/history"
)

// Forged webhook deliveries are judged by rejects_forged alone: refused
// with no effect, they pass it and leave exactly_once to the genuine
// events; accepted, or applied behind a 400, they fail it.
func TestRejectsForged(t *testing.T) {
	run := func(forgedStatus int, effects map[string]int) (forged, exactly Verdict) {
		h := &history.History{Meta: history.Meta{Judge: history.Judge{Invariants: []history.Invariant{
			{Check: RejectsForged, Oracle: "ledger"}, {Check: ExactlyOnce, Oracle: "ledger"}}}}}
		h.Ops = []history.Op{{ID: 0, Key: "evt_ok"}, {ID: 1, Key: "evt_forged", Check: history.CheckForged}, {ID: 2, Key: "evt_ok2"}}
		h.Attempts = []history.Attempt{
			{Op: 0, N: 1, Outcome: history.OK, Status: 201},
			{Op: 1, N: 1, Outcome: history.OK, Status: forgedStatus},
			{Op: 2, N: 1, Outcome: history.OK, Status: 201},
		}
		h.Readings = []history.Reading{{Oracle: "ledger", Kind: history.KindEffects, Effects: effects}}
		vs := Judge(h, Measured{}).Verdicts
		return vs[0], vs[1]
	}
	f, e := run(400, map[string]int{"evt_ok": 1, "evt_ok2": 1})
	if f.Status != Pass || f.Checked != 1 || e.Status != Pass || e.Checked != 2 {
		t.Errorf("refused: rejects_forged %s (%d checked): %s; exactly_once %s (%d checked): %s", f.Status, f.Checked, f.Summary, e.Status, e.Checked, e.Summary)
	}
	f, _ = run(400, map[string]int{"evt_ok": 1, "evt_ok2": 1, "evt_forged": 1})
	if f.Status != Fail || f.Extra != 1 || !strings.Contains(f.Examples[0].Problem, "had 1 effect") {
		t.Errorf("applied behind a 400: %s: %s %+v", f.Status, f.Summary, f.Examples)
	}
	f, _ = run(200, map[string]int{"evt_ok": 1, "evt_ok2": 1})
	if f.Status != Fail || !strings.Contains(f.Examples[0].Problem, "accepted") {
		t.Errorf("accepted: %s: %s", f.Status, f.Summary)
	}
	f, _ = run(503, map[string]int{"evt_ok": 1, "evt_ok2": 1})
	if f.Status != Fail || !strings.Contains(f.Examples[0].Problem, "not a 4xx") {
		t.Errorf("a 5xx: %s: %s", f.Status, f.Summary)
	}
}
