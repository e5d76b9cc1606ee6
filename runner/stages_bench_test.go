package runner

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
	"github.com/idemcheck/idemcheck/scenarios"
)

// BenchmarkStagesOpen runs an open-model load in stages (hold, ramp up,
// hold, ramp down) against a loopback no-op server and checks that every
// stage held its rate within 2%: the ops whose first attempt was sent
// (Start, not the schedule's Intended) within the stage, against the
// integral of its rate. It reports each stage's share and the worst
// one's distance from 100%, and the p99 of how late a first attempt left
// after its time. Run it with -benchtime=1x (one load of 5 s):
//
//	go test ./runner -run '^$' -bench StagesOpen -benchtime=1x
func BenchmarkStagesOpen(b *testing.B) {
	u := noopServer(b)
	s := func(d time.Duration) scenarios.Duration { return scenarios.Duration(d) }
	stages := []scenarios.Stage{
		{Duration: s(time.Second), Rate: 500},
		{Duration: s(1500 * time.Millisecond), Rate: 2000, Ramp: true},
		{Duration: s(time.Second), Rate: 2000},
		{Duration: s(1500 * time.Millisecond), Rate: 200, Ramp: true},
	}
	for b.Loop() {
		sc := stagedScenario(stages...)
		sc.Load.MaxInFlight = 256
		h, err := Run(context.Background(), sc, Options{Target: u, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		worst := 0.0
		for i, st := range measure.Of(h).Stages {
			sent := sentIn(h, time.Duration(st.StartMS*float64(time.Millisecond)), time.Duration((st.StartMS+st.DurationMS)*float64(time.Millisecond)))
			share := float64(sent) / st.TargetOps
			b.ReportMetric(100*share, fmt.Sprintf("stage%d-%%", i+1))
			worst = max(worst, math.Abs(share-1))
			if math.Abs(share-1) > 0.02 {
				b.Errorf("stage %d: %d ops sent of %.0f due (%.2f%%), want within 2%%", i+1, sent, st.TargetOps, 100*share)
			}
			if math.Abs(st.Achieved-1) > 0.02 {
				b.Errorf("stage %d: %.2f%% of its ops scheduled, want within 2%%", i+1, 100*st.Achieved)
			}
		}
		b.ReportMetric(100*worst, "worst-dev-%")
		lag := measure.NewHistogram()
		for _, a := range h.Attempts {
			if a.N == 1 {
				measure.Record(lag, a.Start-a.Intended)
			}
		}
		b.ReportMetric(float64(lag.ValueAtQuantile(99))/1000, "p99-lag-ms")
	}
}

// sentIn counts the ops of h whose first attempt started within [from, to).
func sentIn(h *history.History, from, to time.Duration) int {
	n := 0
	for _, a := range h.Attempts {
		if a.N == 1 && a.Start >= from && a.Start < to {
			n++
		}
	}
	return n
}
