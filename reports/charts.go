package reports

import (
	"math"
	"sort"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
)

// Charts is what the HTML report draws of a run's load, taken from its
// history by New. A summary read back from report.json has none (the
// JSON schema leaves it out): its HTML report shows the verdicts and
// evidence without the load charts.
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

// Bucket is the clean attempts' latency in one time slice, in ms.
type Bucket struct {
	Column        int
	Count         int
	P50, P99, Max float64
}

// FaultMark counts the faults of one kind injected in one time slice.
type FaultMark struct {
	Column int
	Kind   string
	Count  int
}

// Distribution is a latency distribution drawn as HDR histograms are:
// latency (ms) against the percentile on a scale of nines.
type Distribution struct {
	Count int64
	// Points are (nines, ms) pairs: Nines is -log10(1 - percentile/100),
	// so 0 is p0, 1 is p90, 2 is p99, 3 is p99.9.
	Points []Point
	Max    float64
}

// Point is one point of a Distribution.
type Point struct {
	Nines float64
	MS    float64
}

// chartsOf measures h for the charts.
func chartsOf(h *history.History) *Charts {
	c := &Charts{}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		c.Span = max(c.Span, a.End, a.Intended)
	}
	column := func(t time.Duration) int {
		if c.Span <= 0 {
			return 0
		}
		return min(int(int64(t)*Columns/int64(c.Span)), Columns-1)
	}
	lat := make([][]float64, Columns)
	marks := map[FaultMark]int{}
	kinds := map[string]bool{}
	cleanH, faultH := measure.NewHistogram(), measure.NewHistogram()
	for i := range h.Attempts {
		a := &h.Attempts[i]
		switch {
		case history.IsReplay(a.Fault):
		case a.Fault != "":
			marks[FaultMark{Column: column(a.Intended), Kind: a.Fault}]++
			kinds[a.Fault] = true
			measure.Record(faultH, a.Latency())
		case a.Outcome == history.OK:
			col := column(a.Intended)
			lat[col] = append(lat[col], measure.MS(a.Latency()))
			measure.Record(cleanH, a.Latency())
		}
	}
	for col, ls := range lat {
		if len(ls) == 0 {
			continue
		}
		sort.Float64s(ls)
		c.Buckets = append(c.Buckets, Bucket{Column: col, Count: len(ls), P50: rank(ls, 0.50), P99: rank(ls, 0.99), Max: ls[len(ls)-1]})
	}
	for m, n := range marks {
		m.Count = n
		c.Faults = append(c.Faults, m)
	}
	sort.Slice(c.Faults, func(i, j int) bool {
		a, b := c.Faults[i], c.Faults[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Column < b.Column
	})
	for k := range kinds {
		c.FaultKinds = append(c.FaultKinds, k)
	}
	sort.Strings(c.FaultKinds)
	c.Clean, c.Faulted = distribution(cleanH), distribution(faultH)
	return c
}

// rank is the nearest-rank quantile q of sorted values.
func rank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// nineStep is the distance between points of a Distribution, in nines.
const nineStep = 0.05

// distribution reads h's percentile distribution, up to the nines its
// count can resolve (p99.9 needs a thousand values) and at most five.
func distribution(h interface {
	TotalCount() int64
	ValueAtQuantile(float64) int64
	Max() int64
}) Distribution {
	d := Distribution{Count: h.TotalCount(), Points: []Point{}}
	if d.Count == 0 {
		return d
	}
	top := min(math.Log10(float64(d.Count)), 5)
	for k := 0.0; k <= top+1e-9; k += nineStep {
		p := 100 * (1 - math.Pow(10, -k))
		d.Points = append(d.Points, Point{Nines: math.Round(k*100) / 100, MS: float64(h.ValueAtQuantile(p)) / 1000})
	}
	d.Max = float64(h.Max()) / 1000
	return d
}
