package runner

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/idemcheck/idemcheck/history"
)

// Histogram bounds: values are microseconds from 1µs to 1h, 3 significant
// figures.
const (
	histMin     = 1
	histMax     = int64(time.Hour / time.Microsecond)
	histSigFigs = 3
)

// NewHistogram returns an empty latency histogram with the bounds Latency
// uses (microseconds, 1µs..1h, 3 significant figures), for merging.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMin, histMax, histSigFigs)
}

// Latency returns the latency histograms of a history, in microseconds
// measured from the intended start: attempts holds every clean attempt (no
// fault, outcome ok), ops holds history.OpLatency of every op with at least
// one attempt, its replays left out (they come after the op's answer, at
// a time the scenario chose). Values outside 1µs..1h are clamped to the nearest bound, so
// no value is dropped.
func Latency(h *history.History) (attempts, ops *hdrhistogram.Histogram) {
	attempts, ops = NewHistogram(), NewHistogram()
	first := 0
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if a.Fault == "" && a.Outcome == history.OK {
			record(attempts, a.Latency())
		}
		// h.Attempts is sorted by (op, n): an op's attempts are adjacent.
		if i+1 == len(h.Attempts) || h.Attempts[i+1].Op != a.Op {
			as := h.Attempts[first : i+1]
			for len(as) > 1 && IsReplay(as[len(as)-1].Fault) {
				as = as[:len(as)-1]
			}
			record(ops, history.OpLatency(as))
			first = i + 1
		}
	}
	return attempts, ops
}

// record adds d in microseconds, clamped to the histogram's range so that
// RecordValue cannot fail.
func record(h *hdrhistogram.Histogram, d time.Duration) {
	v := min(max(int64(d/time.Microsecond), histMin), histMax)
	if err := h.RecordValue(v); err != nil {
		// Unreachable: v is inside the trackable range. Count it at the
		// top rather than lose it.
		_ = h.RecordValue(histMax)
	}
}
