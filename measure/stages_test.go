package measure

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/history"
)

// Each stage counts the ops whose first attempt was intended within it
// (a retry in the next stage stays with its op's), its rate over what ran
// of it, and in the open model its share of the ops due; a stage the load
// ended within ran only that long, one it never reached not at all.
func TestStagesOf(t *testing.T) {
	start := time.Unix(1e9, 0)
	h := &history.History{
		Meta: history.Meta{Started: start, Ended: start.Add(2500 * time.Millisecond), Stages: []history.Stage{
			{Duration: time.Second, Rate: 4},
			{Duration: 2 * time.Second, Rate: 8, Ramp: true},
			{Duration: time.Second, Rate: 2},
		}},
	}
	intended := []time.Duration{0, msd(250), msd(500), msd(750), msd(1000), msd(1300), msd(1600), msd(1800), msd(2000), msd(2200)}
	for i, at := range intended {
		h.Ops = append(h.Ops, history.Op{ID: i})
		h.Attempts = append(h.Attempts, history.Attempt{Op: i, N: 1, Outcome: history.OK, Status: 201, Intended: at, Start: at, End: at + msd(5)})
	}
	// op 3's retry falls in stage 2: it is still stage 1's op
	h.Attempts = append(h.Attempts, history.Attempt{Op: 3, N: 2, Outcome: history.OK, Status: 201, Intended: msd(1100), Start: msd(1100), End: msd(1110)})
	h.Sort()
	got := Of(h).Stages
	// stage 2 ran 1.5 s of 2: the ops due then are 4·1.5 + 4·1.5²/4 = 8.25
	want := []Stage{
		{Stage: 1, StartMS: 0, DurationMS: 1000, Rate: 4, RanMS: 1000, Ops: 4, OpsPerSecond: 4, TargetOps: 4, Achieved: 1},
		{Stage: 2, StartMS: 1000, DurationMS: 2000, Ramp: true, Rate: 8, FromRate: 4, RanMS: 1500, Ops: 6, OpsPerSecond: 4, TargetOps: 8.25, Achieved: 6 / 8.25},
		{Stage: 3, StartMS: 3000, DurationMS: 1000, Rate: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Of(h).Stages (-want +got):\n%s", diff)
	}
	// in parts, the same
	acc := NewAcc()
	for _, part := range []*history.History{
		{Meta: h.Meta, Ops: h.Ops[:5], Attempts: h.Attempts[:6]},
		{Meta: h.Meta, Ops: []history.Op{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}, Attempts: shift(h.Attempts[6:], 5)},
	} {
		acc.Add(part)
	}
	if diff := cmp.Diff(want, acc.Measures(h.Meta).Stages); diff != "" {
		t.Errorf("Acc.Stages in two parts (-want +got):\n%s", diff)
	}
	if Of(&history.History{}).Stages != nil {
		t.Error("a flat load has stages")
	}
}

// shift renumbers attempts' ops down by n, as a part numbers them.
func shift(as []history.Attempt, n int) []history.Attempt {
	out := make([]history.Attempt, len(as))
	for i, a := range as {
		a.Op -= n
		out[i] = a
	}
	return out
}

func TestStagesClosedModel(t *testing.T) {
	start := time.Unix(1e9, 0)
	h := &history.History{
		Meta: history.Meta{Started: start, Ended: start.Add(2 * time.Second), Stages: []history.Stage{
			{Duration: time.Second, Concurrency: 2}, {Duration: time.Second, Concurrency: 6, Ramp: true}}},
		Ops: []history.Op{{ID: 0}, {ID: 1}, {ID: 2}},
		Attempts: []history.Attempt{
			{Op: 0, N: 1, Outcome: history.OK, Status: 200, Intended: msd(10), End: msd(20)},
			{Op: 1, N: 1, Outcome: history.OK, Status: 200, Intended: msd(1010), End: msd(1020)},
			{Op: 2, N: 1, Outcome: history.OK, Status: 200, Intended: msd(1500), End: msd(1520)},
		},
	}
	got := Of(h).Stages
	want := []Stage{
		{Stage: 1, DurationMS: 1000, Concurrency: 2, RanMS: 1000, Ops: 1, OpsPerSecond: 1},
		{Stage: 2, StartMS: 1000, DurationMS: 1000, Ramp: true, Concurrency: 6, FromConcurrency: 2, RanMS: 1000, Ops: 2, OpsPerSecond: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("closed-model stages (-want +got):\n%s", diff)
	}
}

func TestStageAt(t *testing.T) {
	ss := []history.Stage{{Duration: time.Second}, {Duration: 2 * time.Second}}
	for at, want := range map[time.Duration]int{-1: -1, 0: 0, msd(999): 0, msd(1000): 1, msd(2999): 1, msd(3000): -1} {
		if got := StageAt(ss, at); got != want {
			t.Errorf("StageAt(%v) = %d, want %d", at, got, want)
		}
	}
}
