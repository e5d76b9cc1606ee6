package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// staged is valid with its load replaced by load (a YAML block, indented
// under load:, from line 7).
func staged(load string) string {
	return strings.Replace(valid, "  ops: 10\n  concurrency: 2\n", load, 1)
}

func TestStagesParse(t *testing.T) {
	s, err := Parse("t.yaml", []byte(staged("  stages:\n    - {duration: 10s, rate: 50/s}\n    - {duration: 20s, rate: 3000/m, ramp: true}\n    - {duration: 5s, rate: 10}\n")))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	l := s.Load
	want := []Stage{{Duration: Duration(10 * time.Second), Rate: 50}, {Duration: Duration(20 * time.Second), Rate: 50, Ramp: true},
		{Duration: Duration(5 * time.Second), Rate: 10}}
	if len(l.Stages) != 3 || l.Stages[0] != want[0] || l.Stages[1] != want[1] || l.Stages[2] != want[2] {
		t.Errorf("Stages = %+v, want %+v", l.Stages, want)
	}
	if l.Duration.Std() != 35*time.Second || !l.Open() {
		t.Errorf("Duration = %v, Open = %v: want the stages' 35s, open", l.Duration, l.Open())
	}
	s, err = Parse("t.yaml", []byte(staged("  ops: 100\n  stages:\n    - {duration: 1s, concurrency: 2}\n    - {duration: 1s, concurrency: 8, ramp: true}\n")))
	if err != nil {
		t.Fatalf("Parse(closed stages and ops) = %v", err)
	}
	if s.Load.Open() || s.Load.MaxConcurrency() != 8 || s.Load.Ops != 100 {
		t.Errorf("closed stages: Open %v, MaxConcurrency %d, Ops %d: want false, 8, 100", s.Load.Open(), s.Load.MaxConcurrency(), s.Load.Ops)
	}
}

func TestStagesDiagnostics(t *testing.T) {
	many := "  stages:\n" + strings.Repeat("    - {duration: 1s, rate: 1}\n", MaxStages+1)
	tests := []struct {
		name, load string
		want       []want
	}{
		{"with rate, concurrency and duration", "  rate: 5\n  concurrency: 2\n  duration: 10s\n  stages:\n    - {duration: 1s, rate: 1}\n", []want{
			{7, "load.rate", "set load.rate or load.stages, not both"},
			{8, "load.concurrency", "set load.concurrency or load.stages"},
			{9, "load.duration", "set load.duration or load.stages"},
		}},
		{"zero duration", "  stages:\n    - {duration: 0s, rate: 1}\n", []want{{8, "load.stages[0].duration", "above 0"}}},
		{"missing duration", "  stages:\n    - {rate: 1}\n", []want{{8, "load.stages[0].duration", "above 0"}}},
		{"zero rate", "  stages:\n    - {duration: 1s, rate: 0}\n", []want{{8, "load.stages[0].rate", "above 0"}}},
		{"rate too high", "  stages:\n    - {duration: 1s, rate: 20000001}\n", []want{{8, "load.stages[0].rate", "at most 10000000/s"}}},
		{"bad rate", "  stages:\n    - {duration: 1s, rate: fast}\n", []want{{8, "load.stages[0].rate", "bad rate"}}},
		{"concurrency 0", "  stages:\n    - {duration: 1s, concurrency: 0}\n", []want{{8, "load.stages[0].concurrency", "within 1..100000"}}},
		{"concurrency too high", "  stages:\n    - {duration: 1s, concurrency: 100001}\n", []want{{8, "load.stages[0].concurrency", "within 1..100000"}}},
		{"neither", "  stages:\n    - {duration: 1s}\n    - {duration: 1s, rate: 1}\n", []want{{8, "load.stages[0]", "set the stage's rate"}}},
		{"both", "  stages:\n    - {duration: 1s, rate: 1, concurrency: 2}\n", []want{{8, "load.stages[0].rate", "set rate or concurrency, not both"}}},
		{"mixed models", "  stages:\n    - {duration: 1s, rate: 1}\n    - {duration: 1s, concurrency: 2}\n", []want{{9, "load.stages[1]", "mix the open model"}}},
		{"unknown field", "  stages:\n    - {duration: 1s, rate: 1, target: 2}\n", []want{{8, "load.stages[0].target", "unknown field"}}},
		{"too many", many, []want{{7, "load.stages", fmt.Sprintf("at most %d", MaxStages)}}},
		{"too long", "  stages:\n" + strings.Repeat("    - {duration: 2000000h, rate: 1}\n", 2), []want{{9, "load.stages[1].duration", "longer than a duration can hold"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkDiags(t, diagnose(t, staged(tc.load)), tc.want)
		})
	}
}

// A load with no stages, no rate and no concurrency still says so.
func TestStagesEmptyIsFlat(t *testing.T) {
	checkDiags(t, diagnose(t, staged("  ops: 5\n  stages: []\n")), []want{{6, "load", "set load.concurrency"}})
}
