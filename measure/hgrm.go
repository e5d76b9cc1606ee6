package measure

import (
	"io"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histograms are a run's latency histograms, in µs (NewHistogram): per
// clean attempt and per op, those Latency gives the percentiles of.
type Histograms struct {
	Attempt, Op *hdrhistogram.Histogram
}

// WriteHGRM writes h, a histogram in µs, as HdrHistogram's percentile
// distribution (.hgrm: 5 ticks per half distance, values in ms), the file
// the standard plotter reads and bench overhead writes.
func WriteHGRM(w io.Writer, h *hdrhistogram.Histogram) error {
	_, err := h.PercentilesPrint(w, 5, 1000)
	return err
}
