package measure

import (
	"math"
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/idemcheck/idemcheck/history"
)

// Charts are the figures of a run's load that the HTML report draws:
// latency over time with the injected faults, and the percentile
// distributions of clean and faulted attempts.
type Charts struct {
	// Span is when the last attempt ended, from the run's start.
	Span time.Duration
	// Buckets are the clean attempts' latency over time, in Columns equal
	// slices of Span; a slice without a clean attempt is left out.
	Buckets []Bucket
	// Faults mark every injected fault (replays are not faults) at its
	// intended send time, gathered into the same slices by kind.
	Faults []FaultMark
	// FaultKinds are the kinds in Faults, sorted.
	FaultKinds []string
	// Clean and Faulted are the percentile distributions of clean attempts
	// (no fault, an answer) and of attempts a fault was injected into,
	// each from an HDR histogram, measured from the intended start.
	Clean, Faulted Distribution
}

// Columns is how many time slices Charts gathers a run's attempts into.
const Columns = 120

// Bucket is the clean attempts' latency in one time slice.
type Bucket struct {
	Column        int
	Count         int
	P50, P99, Max time.Duration
}

// FaultMark counts the faults of one kind injected in one time slice.
type FaultMark struct {
	Column int
	Kind   string
	Count  int
}

// Distribution is a latency distribution as HDR histograms are drawn:
// latency against the percentile on a scale of nines.
type Distribution struct {
	Count int64
	// Points are (nines, latency) pairs: Nines is -log10(1 -
	// percentile/100), so 0 is p0, 1 is p90, 2 is p99, 3 is p99.9.
	Points []Point
	Max    time.Duration
}

// Point is one point of a Distribution.
type Point struct {
	Nines   float64
	Latency time.Duration
}

// ChartsOf measures the history h for the charts.
func ChartsOf(h *history.History) *Charts {
	c := NewChartsAcc(history.Span(h.Attempts))
	c.Add(h)
	return c.Charts()
}

// ChartsAcc measures a history given in parts for the charts, as ChartsOf
// measures it whole; its memory does not grow with the history.
type ChartsAcc struct {
	span   time.Duration
	lat    []*hdrhistogram.Histogram // per column, created on first use
	marks  map[FaultMark]int
	kinds  map[string]bool
	cleanH *hdrhistogram.Histogram
	faultH *hdrhistogram.Histogram
}

// NewChartsAcc returns an empty ChartsAcc for a run whose attempts all
// end by span (history.Span).
func NewChartsAcc(span time.Duration) *ChartsAcc {
	return &ChartsAcc{span: span, lat: make([]*hdrhistogram.Histogram, Columns), marks: map[FaultMark]int{},
		kinds: map[string]bool{}, cleanH: NewHistogram(), faultH: NewHistogram()}
}

func (c *ChartsAcc) column(t time.Duration) int {
	if c.span <= 0 {
		return 0
	}
	return max(min(int(int64(t)*Columns/int64(c.span)), Columns-1), 0)
}

// Add measures the attempts of h.
func (c *ChartsAcc) Add(h *history.History) {
	for i := range h.Attempts {
		a := &h.Attempts[i]
		switch {
		case history.IsReplay(a.Fault):
		case a.Fault != "":
			c.marks[FaultMark{Column: c.column(a.Intended), Kind: a.Fault}]++
			c.kinds[a.Fault] = true
			Record(c.faultH, a.Latency())
		case a.Outcome == history.OK:
			col := c.column(a.Intended)
			if c.lat[col] == nil {
				// 2 significant digits: a line 1% off is drawn alike, in
				// a 20th of the memory of 3
				c.lat[col] = hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 2)
			}
			Record(c.lat[col], a.Latency())
			Record(c.cleanH, a.Latency())
		}
	}
}

// Charts returns the charts of every part added.
func (c *ChartsAcc) Charts() *Charts {
	out := &Charts{Span: c.span}
	for col, h := range c.lat {
		if h == nil {
			continue
		}
		p := PercentilesOf(h)
		out.Buckets = append(out.Buckets, Bucket{Column: col, Count: int(p.Count), P50: p.P50, P99: p.P99, Max: p.Max})
	}
	for m, n := range c.marks {
		m.Count = n
		out.Faults = append(out.Faults, m)
	}
	sort.Slice(out.Faults, func(i, j int) bool {
		a, b := out.Faults[i], out.Faults[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Column < b.Column
	})
	for k := range c.kinds {
		out.FaultKinds = append(out.FaultKinds, k)
	}
	sort.Strings(out.FaultKinds)
	out.Clean, out.Faulted = distribution(c.cleanH), distribution(c.faultH)
	return out
}

// nineStep is the distance between points of a Distribution, in nines.
const nineStep = 0.05

// distribution reads h's percentile distribution, up to the nines its
// count can resolve (p99.9 needs a thousand values) and at most five.
func distribution(h *hdrhistogram.Histogram) Distribution {
	d := Distribution{Count: h.TotalCount(), Points: []Point{}}
	if d.Count == 0 {
		return d
	}
	top := min(math.Log10(float64(d.Count)), 5)
	for k := 0.0; k <= top+1e-9; k += nineStep {
		p := 100 * (1 - math.Pow(10, -k))
		d.Points = append(d.Points, Point{Nines: math.Round(k*100) / 100, Latency: micros(h.ValueAtQuantile(p))})
	}
	d.Max = micros(h.Max())
	return d
}
