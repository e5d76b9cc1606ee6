package reports

import (
	"math"
	"strconv"
	"time"
)

// Axes of the charts. A tick's value is computed as i × step, never by
// adding the step up (0.1 + 0.2 is 0.30000000000000004), and labelled
// with at most the decimals the step needs, trailing zeros dropped.

// timeScale is a time axis: a round step, and the unit its ticks are
// labelled in.
type timeScale struct {
	step time.Duration
	unit time.Duration
	name string // the unit's symbol: "ms", "s", "min", "h"
	prec int    // decimals a label needs, in that unit
}

// timeSteps are the steps a time axis may take: 1, 2 and 5 × 10ⁿ below
// a minute, then the clock's round steps, then 1, 2 and 5 × 10ⁿ hours.
var timeSteps = func() []time.Duration {
	var out []time.Duration
	for d := time.Microsecond; d < 10*time.Second; d *= 10 {
		out = append(out, d, 2*d, 5*d)
	}
	out = append(out, 10*time.Second, 15*time.Second, 30*time.Second,
		time.Minute, 2*time.Minute, 5*time.Minute, 10*time.Minute, 15*time.Minute, 30*time.Minute)
	for d := time.Hour; d < 10000*time.Hour; d *= 10 {
		out = append(out, d, 2*d, 5*d)
	}
	return out
}()

// timeScaleOf is the scale dividing [0, span] in about n steps, in the
// unit span reads best in: ms below a second, s below two minutes, min
// below two hours, else h.
func timeScaleOf(span time.Duration, n int) timeScale {
	raw := span / time.Duration(max(n, 1))
	s := timeScale{step: timeSteps[len(timeSteps)-1]}
	for _, d := range timeSteps {
		if d >= raw {
			s.step = d
			break
		}
	}
	switch {
	case span >= 2*time.Hour:
		s.unit, s.name = time.Hour, "h"
	case span >= 2*time.Minute:
		s.unit, s.name = time.Minute, "min"
	case span >= time.Second:
		s.unit, s.name = time.Second, "s"
	default:
		s.unit, s.name = time.Millisecond, "ms"
	}
	for s.prec < 6 && !whole(float64(s.step)/float64(s.unit)*math.Pow(10, float64(s.prec))) {
		s.prec++
	}
	return s
}

func whole(v float64) bool { return math.Abs(v-math.Round(v)) < 1e-9 }

// ticks are the scale's ticks from 0 to end.
func (s timeScale) ticks(end time.Duration) []time.Duration {
	out := []time.Duration{0}
	for i := time.Duration(1); i*s.step <= end; i++ {
		out = append(out, i*s.step)
	}
	return out
}

// top is the first tick at or after span.
func (s timeScale) top(span time.Duration) time.Duration {
	n := (span + s.step - 1) / s.step
	return max(n, 1) * s.step
}

// label is t in the scale's unit: "250 ms", "1.5 s", "40 min".
func (s timeScale) label(t time.Duration) string {
	return trimZeros(strconv.FormatFloat(float64(t)/float64(s.unit), 'f', s.prec, 64)) + " " + s.name
}

// durationText is d for a person, to the millisecond below a minute:
// "0.3 s", "1.25 s", "1 min 30 s", "2 h 5 min".
func durationText(d time.Duration) string {
	switch {
	case d < time.Second:
		return trimZeros(strconv.FormatFloat(msOf(d), 'f', 3, 64)) + " ms"
	case d < time.Minute:
		return trimZeros(strconv.FormatFloat(d.Seconds(), 'f', 3, 64)) + " s"
	case d < time.Hour:
		d = d.Round(time.Second)
		return joinUnits(int64(d/time.Minute), "min", int64(d%time.Minute/time.Second), "s")
	}
	d = d.Round(time.Minute)
	return joinUnits(int64(d/time.Hour), "h", int64(d%time.Hour/time.Minute), "min")
}

func joinUnits(a int64, an string, b int64, bn string) string {
	s := strconv.FormatInt(a, 10) + " " + an
	if b != 0 {
		s += " " + strconv.FormatInt(b, 10) + " " + bn
	}
	return s
}

// valueTicks are the ticks of a value axis from 0 to top by step (a
// round step: niceStep), each labelled with at most the decimals step
// needs.
func valueTicks(top, step float64) (at []float64, labels []string) {
	prec := 0
	for prec < 9 && !whole(step*math.Pow(10, float64(prec))) {
		prec++
	}
	for i := 0; ; i++ {
		v := float64(i) * step
		if v > top+step/1e6 {
			break
		}
		at = append(at, v)
		labels = append(labels, trimZeros(strconv.FormatFloat(v, 'f', prec, 64)))
	}
	return at, labels
}
