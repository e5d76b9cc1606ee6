package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/measure"
)

func TestStageLine(t *testing.T) {
	for _, c := range []struct {
		s    measure.Stage
		want string
	}{
		{measure.Stage{Stage: 1, DurationMS: 10000, Rate: 100, RanMS: 10000, Ops: 998, OpsPerSecond: 99.8, TargetOps: 1000, Achieved: 0.998},
			"stage 1 (0–10 s): 100 ops/s: sent 998 ops, 99.8 ops/s (99.8% of 1000 due)"},
		{measure.Stage{Stage: 2, StartMS: 10000, DurationMS: 10000, Ramp: true, FromRate: 100, Rate: 300, RanMS: 2500, Ops: 281, OpsPerSecond: 112.4, TargetOps: 281.25, Achieved: 281 / 281.25},
			"stage 2 (10–20 s): ramp 100 → 300 ops/s, cut short after 2.5 s: sent 281 ops, 112.4 ops/s (99.9% of 281 due)"},
		{measure.Stage{Stage: 3, StartMS: 20000, DurationMS: 500, Rate: 0.5},
			"stage 3 (20–20.5 s): 0.5 ops/s: not reached, the load ended before it"},
		{measure.Stage{Stage: 1, DurationMS: 30000, Concurrency: 8, RanMS: 30000, Ops: 1523, OpsPerSecond: 50.77},
			"stage 1 (0–30 s): 8 workers: 1523 ops done, 50.8 ops/s"},
		{measure.Stage{Stage: 2, StartMS: 30000, DurationMS: 30000, Ramp: true, FromConcurrency: 8, Concurrency: 32, RanMS: 30000, Ops: 6000, OpsPerSecond: 200},
			"stage 2 (30–60 s): ramp 8 → 32 workers: 6000 ops done, 200.0 ops/s"},
	} {
		if got := stageLine(c.s); got != c.want {
			t.Errorf("stageLine(%+v) =\n%s\nwant\n%s", c.s, got, c.want)
		}
	}
}

// Every report of a run in stages gives a line per stage (JSON its
// figures); a flat run's reports are as they were (the goldens).
func TestStagesInReports(t *testing.T) {
	s := fixture(t)
	s.Stages = []measure.Stage{
		{Stage: 1, DurationMS: 1000, Rate: 2, RanMS: 1000, Ops: 2, OpsPerSecond: 2, TargetOps: 2, Achieved: 1},
		{Stage: 2, StartMS: 1000, DurationMS: 1000, Rate: 1, RanMS: 1000, Ops: 1, OpsPerSecond: 1, TargetOps: 1, Achieved: 1},
	}
	line := "stage 2 (1–2 s): 1 ops/s: sent 1 ops, 1.0 ops/s (100.0% of 1 due)"
	for _, format := range []string{"text", "markdown", "html"} {
		var b bytes.Buffer
		w, _ := Writer(format)
		if err := w(&b, []*Summary{s}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), line) {
			t.Errorf("%s report holds no line %q:\n%s", format, line, b.String())
		}
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, []*Summary{s}); err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Stages) != 2 || back.Stages[1] != s.Stages[1] {
		t.Errorf("JSON stages read back = %+v, want %+v", back.Stages, s.Stages)
	}
	if !strings.Contains(b.String(), `"ops_per_second": 1,`) || !strings.Contains(b.String(), `"stages": [`) {
		t.Errorf("JSON report holds no stages:\n%s", b.String())
	}
}
