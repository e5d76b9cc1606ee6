package measure

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/clip"
)

// Measures are a run's figures.
type Measures struct {
	Load     Load         `json:"load"`
	Faults   []FaultCount `json:"faults"`
	Statuses []Count      `json:"statuses"`
	Errors   []Count      `json:"errors"`
	Latency  Latency      `json:"latency"`
	// Stages are the figures of each stage of a load in stages; nil
	// for a flat load.
	Stages []Stage `json:"stages,omitempty"`
	// Histograms are the histograms Latency was read from, for .hgrm
	// files; nil when not measured from a history.
	Histograms *Histograms `json:"-"`
}

// Load counts what was sent and how ops ended.
type Load struct {
	Ops           int     `json:"ops"`
	Attempts      int     `json:"attempts"`
	Retries       int     `json:"retries"`
	Replays       int     `json:"replays"` // attempts sent again after a 2xx on purpose (operation.replay)
	Acked         int     `json:"acked"`
	NotSent       int     `json:"not_sent"`
	Rejected      int     `json:"rejected"` // every answer a 4xx: the API said no
	Indeterminate int     `json:"indeterminate"`
	ErrorRate     float64 `json:"error_rate"` // share of ops without a 2xx
	DurationMS    float64 `json:"duration_ms"`
	OpsPerSecond  float64 `json:"ops_per_second"`
}

// Count is a named count; lists of them are sorted by name.
type Count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// FaultCount is how many attempts a fault kind was planned for, and how
// many of them it bit (changed what happened: history.Attempt.Bit).
// Lists of them are sorted by name.
type FaultCount struct {
	Name string `json:"name"`
	// Count is Planned, under the name every Count has.
	Count   int `json:"count"`
	Planned int `json:"planned"`
	Bit     int `json:"bit"`
	// BitUnknown is true for a history that did not record whether its
	// faults bit (history.Meta.BitRecorded): Bit is then 0 and says
	// nothing.
	BitUnknown bool `json:"bit_unknown,omitempty"`
}

// Percentiles of a latency distribution. Reports give them in ms.
type Percentiles struct {
	Count                    int64
	P50, P90, P99, P999, Max time.Duration
	// MeanUS is the mean in µs, as the histogram gives it: the mean of
	// whole microseconds falls between nanoseconds, and a report shows
	// it unrounded.
	MeanUS float64
}

// Latency holds per-attempt (clean attempts only: no fault, an answer) and
// per-op (first intended send to final answer, retries included, replays
// left out) latency, both measured from the intended start so a stalled
// scheduler cannot hide queueing.
type Latency struct {
	Attempt, Op Percentiles
}

// Of measures the history h.
func Of(h *history.History) Measures {
	a := NewAcc()
	a.Add(h)
	return a.Measures(h.Meta)
}

// Acc measures a history given in parts (any split of its ops, each op
// with all its attempts), as Of measures it whole.
type Acc struct {
	m                      Measures
	faults, statuses, errs map[string]int
	bit                    map[string]int
	attemptH, opH          *hdrhistogram.Histogram
	stages                 stageTally
}

// NewAcc returns an empty Acc.
func NewAcc() *Acc {
	return &Acc{faults: map[string]int{}, statuses: map[string]int{}, errs: map[string]int{}, bit: map[string]int{},
		attemptH: NewHistogram(), opH: NewHistogram()}
}

// Add measures the ops of h.
func (acc *Acc) Add(h *history.History) {
	m := &acc.m
	for op := range h.Ops {
		as := h.AttemptsOf(op)
		if len(as) == 0 {
			continue
		}
		m.Load.Ops++
		m.Load.Attempts += len(as)
		m.Load.Retries += retries(as)
		switch history.State(as) {
		case history.Acked:
			m.Load.Acked++
		case history.NotSent:
			m.Load.NotSent++
		case history.Rejected:
			m.Load.Rejected++
		default:
			m.Load.Indeterminate++
		}
		for i := range as {
			a := &as[i]
			switch {
			case history.IsReplay(a.Fault):
				m.Load.Replays++
			case a.Fault != "":
				acc.faults[a.Fault]++
				if a.Bit {
					acc.bit[a.Fault]++
				}
			}
			if a.Outcome == history.OK {
				acc.statuses[strconv.Itoa(a.Status)]++
				if a.Fault == "" {
					Record(acc.attemptH, a.Latency())
				}
			} else {
				acc.statuses[a.Outcome.String()]++
				if a.Fault == "" && a.Err != "" {
					acc.errs[clip.Words(a.Err, 120)]++
				}
			}
		}
		Record(acc.opH, history.OpLatency(as))
		acc.stages.add(h.Meta.Stages, as[0].Intended)
	}
}

// Measures returns the measures of every part added, of the run meta
// describes.
func (acc *Acc) Measures(meta history.Meta) Measures {
	m := acc.m
	m.Faults, m.Statuses, m.Errors = faultCounts(acc.faults, acc.bit, !meta.BitRecorded), counts(acc.statuses), counts(acc.errs)
	m.Latency = Latency{Attempt: PercentilesOf(acc.attemptH), Op: PercentilesOf(acc.opH)}
	m.Stages, m.Histograms = acc.stages.stages(meta), &Histograms{Attempt: acc.attemptH, Op: acc.opH}
	if m.Load.Ops > 0 {
		m.Load.ErrorRate = float64(m.Load.Ops-m.Load.Acked) / float64(m.Load.Ops)
	}
	if !meta.Ended.IsZero() && meta.Ended.After(meta.Started) {
		d := meta.Ended.Sub(meta.Started)
		m.Load.DurationMS = MS(d)
		m.Load.OpsPerSecond = float64(m.Load.Ops) / d.Seconds()
	}
	return m
}

// NewHistogram is a latency histogram in µs, from 1 µs to an hour, with 3
// significant digits.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
}

// Record adds d in µs, clamped to the histogram's range (a latency beyond
// an hour is recorded as an hour), where RecordValue cannot fail.
func Record(h *hdrhistogram.Histogram, d time.Duration) {
	us := min(max(d.Microseconds(), 1), h.HighestTrackableValue())
	if err := h.RecordValue(us); err != nil {
		panic(fmt.Sprintf("recording %dµs within the histogram's range: %v", us, err))
	}
}

// PercentilesOf reads the percentiles of h, a histogram in µs
// (NewHistogram).
func PercentilesOf(h *hdrhistogram.Histogram) Percentiles {
	if h.TotalCount() == 0 {
		return Percentiles{}
	}
	q := func(p float64) time.Duration { return micros(h.ValueAtQuantile(p)) }
	return Percentiles{
		Count: h.TotalCount(),
		P50:   q(50), P90: q(90), P99: q(99), P999: q(99.9),
		Max:    micros(h.Max()),
		MeanUS: h.Mean(),
	}
}

// micros is a histogram's value, in µs, as a Duration.
func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

func faultCounts(planned, bit map[string]int, unknown bool) []FaultCount {
	out := make([]FaultCount, 0, len(planned))
	for _, c := range counts(planned) {
		f := FaultCount{Name: c.Name, Count: c.Count, Planned: c.Count, Bit: bit[c.Name], BitUnknown: unknown}
		if unknown {
			f.Bit = 0
		}
		out = append(out, f)
	}
	return out
}

func counts(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{Name: k, Count: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// MS is d in milliseconds.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// retries counts an op's attempts after its first, replays left out.
func retries(as []history.Attempt) int {
	n := 0
	for i := 1; i < len(as); i++ {
		if !history.IsReplay(as[i].Fault) {
			n++
		}
	}
	return n
}

// SlowAllowed is how many of n ops may be slower than a latency limit
// while the percentile (50, 90, 99, 99.9; 100 for the max) of n ops, as
// PercentilesOf reads it from an HDR histogram, stays within it: the
// percentile is the value of the op at rank round(p/100 × n), clamped to
// [1, n], so it passes the limit once more than n − rank ops are slower.
// It never decreases as n grows: a count proven over a bound on n holds
// for every smaller load.
func SlowAllowed(percentile float64, n int) int {
	if n <= 0 {
		return 0
	}
	rank := min(max(int64(percentile/100*float64(n)+0.5), 1), int64(n))
	return n - int(rank)
}
