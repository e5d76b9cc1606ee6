package history

import "time"

// Stage is one stage of a load in stages, as the scenario gave it for the
// whole run (Meta.Stages): it lasts Duration and holds Rate (open model,
// ops per second) or Concurrency (closed model, workers), or, with Ramp,
// goes there linearly from the previous stage's value (0 before the
// first). The stages follow each other from the load's start.
type Stage struct {
	Duration    time.Duration `json:"duration_ns"`
	Rate        float64       `json:"rate,omitempty"`
	Concurrency int           `json:"concurrency,omitempty"`
	Ramp        bool          `json:"ramp,omitempty"`
}
