package trial

import (
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/reports"
)

// SaveHGRM writes each run's attempt and op latency histograms to dir
// (run --hgrm) as HdrHistogram percentile files named after its scenario,
// safe and unique among them (DirNames): NAME.attempt.hgrm and
// NAME.op.hgrm (reports.SaveHGRM). A run that did not run writes none. It
// returns how many runs' histograms were written, and every run's error
// joined.
func SaveHGRM(dir string, sums []*reports.Summary) (int, error) {
	names := make([]string, len(sums))
	for i, s := range sums {
		names[i] = s.Scenario.Name
	}
	files := DirNames(names)
	var errs []error
	written := 0
	for i, s := range sums {
		if s.Histograms == nil {
			continue
		}
		if err := reports.SaveHGRM(dir, files[i], s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Scenario.Name, err))
			continue
		}
		written++
	}
	return written, errors.Join(errs...)
}
