package reports

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/idemcheck/idemcheck/internal/atomicfile"
	"github.com/idemcheck/idemcheck/measure"
)

// SaveHGRM writes sum's latency histograms to dir, as HdrHistogram
// percentile files (.hgrm, values in ms) named after name, a safe file
// name: name.attempt.hgrm (clean attempts) and name.op.hgrm (ops, retries
// included), each whole or not at all. A summary without histograms (a
// scenario that did not run) writes nothing.
func SaveHGRM(dir, name string, sum *Summary) error {
	hs := sum.Histograms
	if hs == nil {
		return nil
	}
	for _, f := range []struct {
		kind string
		h    *hdrhistogram.Histogram
	}{{"attempt", hs.Attempt}, {"op", hs.Op}} {
		if f.h == nil {
			continue
		}
		path := filepath.Join(dir, name+"."+f.kind+".hgrm")
		if err := atomicfile.Write(path, func(w *os.File) error { return measure.WriteHGRM(w, f.h) }); err != nil {
			return err
		}
	}
	return nil
}

// SaveHGRMs writes each run's histograms to dir (run --hgrm) under the
// file name of the same index in names (safe and unique among them: the
// caller's, as trial.DirNames gives them), NAME.attempt.hgrm and
// NAME.op.hgrm. A run that did not run writes none. It returns how many
// runs' histograms were written, and every run's error joined.
func SaveHGRMs(dir string, names []string, sums []*Summary) (int, error) {
	var errs []error
	written := 0
	for i, s := range sums {
		if s.Histograms == nil {
			continue
		}
		if err := SaveHGRM(dir, names[i], s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Scenario.Name, err))
			continue
		}
		written++
	}
	return written, errors.Join(errs...)
}
