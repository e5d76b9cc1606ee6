package checks

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/history"
)

// A judge of a run that lost a shard and had another interrupted names
// both: the lost shard first, then the interruption and its phase.
func TestJudgeLostAndInterruptedShards(t *testing.T) {
	h := hist(o("k1", ok(201)), o("k2", ok(201)))
	h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: ExactlyOnce, Oracle: "ledger"}}}
	h.Meta.Shard = history.Shard{Count: 3, Delivered: []int{0, 2}}
	h.Meta.Interrupt(history.PhaseLoad)
	h.Readings = []history.Reading{*effects(map[string]int{"k1": 1, "k2": 1})}
	j := Judge(h, Measured{})
	if j.Result != Inconclusive || !strings.Contains(j.Why, "shard 1 never delivered its history") || !strings.Contains(j.Why, "interrupted in the load") {
		t.Errorf("Judge(shard 1 lost, another interrupted) = %s (%s), want inconclusive naming both", j.Result, j.Why)
	}
}

// An interruption after the load leaves a run whose invariants held
// inconclusive, saying in which phase it came.
func TestJudgeInterruptedAfterLoad(t *testing.T) {
	h := hist(o("k1", ok(201)))
	h.Meta.Judge = history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: ExactlyOnce, Oracle: "ledger"}}}
	h.Meta.Interrupt(history.PhaseQuiet)
	h.Readings = []history.Reading{*effects(map[string]int{"k1": 1})}
	if j := Judge(h, Measured{}); j.Result != Inconclusive || !strings.Contains(j.Why, "interrupted in the quiet period") {
		t.Errorf("Judge(interrupted in the quiet period) = %s (%s), want inconclusive naming the phase", j.Result, j.Why)
	}
}
