package trial

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
)

// A rate or a concurrency on the command line replaces a load in stages
// with a flat one as long as the stages; ops or a duration keep the
// stages (the runner ends the load at the first bound reached).
func TestOverridesStages(t *testing.T) {
	t.Parallel()
	staged := func() *scenarios.Scenario {
		return &scenarios.Scenario{Load: scenarios.Load{Duration: scenarios.Duration(3 * time.Second), Stages: []scenarios.Stage{
			{Duration: scenarios.Duration(time.Second), Rate: 10}, {Duration: scenarios.Duration(2 * time.Second), Rate: 20, Ramp: true}}}}
	}
	for _, c := range []struct {
		name      string
		o         Overrides
		stages    bool
		rate      scenarios.Rate
		conc, ops int
		duration  time.Duration
	}{
		{"rate", Overrides{Rate: 50}, false, 50, 0, 0, 3 * time.Second},
		{"concurrency", Overrides{Concurrency: 4}, false, 0, 4, 0, 3 * time.Second},
		{"duration", Overrides{Duration: 1500 * time.Millisecond}, true, 0, 0, 0, 1500 * time.Millisecond},
		{"ops", Overrides{Ops: 7}, true, 0, 0, 7, 0},
	} {
		sc := staged()
		c.o.Apply(sc)
		l := sc.Load
		if (len(l.Stages) > 0) != c.stages || l.Rate != c.rate || l.Concurrency != c.conc || l.Ops != c.ops || l.Duration.Std() != c.duration {
			t.Errorf("%s: load = %+v, want stages %v, rate %v, concurrency %d, ops %d, duration %v", c.name, l, c.stages, c.rate, c.conc, c.ops, c.duration)
		}
	}
}
