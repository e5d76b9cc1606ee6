package runner

import (
	"math"
	"time"
)

// Pacer spaces the ops of the open model at a constant rate: when each is
// due. It is a pure function of the op's number, so it is tested without
// sleeping (after vegeta's ConstantPacer).
type Pacer struct {
	Rate float64 // ops per second, > 0
}

// Due returns when op number hit (0-based) is scheduled, as an offset from
// the start of the load: hit / Rate.
func (p Pacer) Due(hit int) time.Duration {
	if p.Rate <= 0 {
		return 0
	}
	d := float64(hit) * float64(time.Second) / p.Rate
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// Ramp is a load in stages (load.stages) as the runner paces it: the
// rate of the open model, or the workers of the closed model, over the
// time since the load's start. Its methods are pure functions of that
// time and of the op's (or worker's) number, so they are tested without
// sleeping.
type Ramp []Step

// Step is one stage of a Ramp: for Duration, the value (ops per second,
// or workers) goes linearly from From to To; From == To holds it.
type Step struct {
	Duration time.Duration
	From, To float64
}

// End is when the last step ends.
func (r Ramp) End() time.Duration {
	var end time.Duration
	for _, s := range r {
		end += s.Duration
	}
	return end
}

// ops is how many ops step s makes in its first x seconds: the area under
// its rate.
func (s Step) ops(x float64) float64 {
	d := s.Duration.Seconds()
	if d <= 0 {
		return 0
	}
	return s.From*x + (s.To-s.From)*x*x/(2*d)
}

// Due returns when op number hit (0-based) is scheduled in the open
// model, as an offset from the start of the load: the time at which the
// ops made so far, the integral of the rate, reach hit. An op past the
// last step is never due (math.MaxInt64).
func (r Ramp) Due(hit int) time.Duration {
	var start time.Duration
	k := float64(hit)
	for _, s := range r {
		n := s.ops(s.Duration.Seconds())
		if k >= n {
			k -= n
			start += s.Duration
			continue
		}
		// Solve From·x + (To−From)·x²/(2D) = k for x in [0, D], in the
		// form that stays exact when From = To or From = 0.
		var x float64
		if k > 0 {
			a, d := s.From, s.Duration.Seconds()
			x = 2 * k / (a + math.Sqrt(max(a*a+2*(s.To-a)*k/d, 0)))
		}
		off := time.Duration(x * float64(time.Second))
		return start + min(max(off, 0), s.Duration-1)
	}
	return math.MaxInt64
}

// Workers is how many workers the closed model runs at t: a step's
// value, rounded to the nearest whole worker; 0 past the last step.
func (r Ramp) Workers(t time.Duration) int {
	var start time.Duration
	for _, s := range r {
		if t < start+s.Duration {
			x := float64(t-start) / float64(s.Duration)
			return int(math.Floor(s.From + (s.To-s.From)*x + 0.5))
		}
		start += s.Duration
	}
	return 0
}

// Wake returns the earliest time from t on at which worker (0-based)
// works in the closed model, t itself when it works at t; false when it
// works no more before the last step ends. A worker works while the
// step's value, rounded to the nearest, is above its number, so that
// Workers(t) of them work at any t.
func (r Ramp) Wake(worker int, t time.Duration) (time.Duration, bool) {
	w := float64(worker) + 0.5 // works while the value is at least w
	var start time.Duration
	for _, s := range r {
		end := start + s.Duration
		if t >= end {
			start = end
			continue
		}
		lo := max(t, start)
		x := float64(lo-start) / float64(s.Duration) // share of the step gone at lo
		switch {
		case s.From+(s.To-s.From)*x >= w:
			return lo, true // works now
		case s.To > s.From && s.To >= w:
			// a rising ramp reaches w within the step
			on := start + time.Duration((w-s.From)/(s.To-s.From)*float64(s.Duration))
			if on < end {
				return max(on, lo), true
			}
		}
		start = end
	}
	return 0, false
}

// Cut is r ending at end at the latest: the steps past it dropped, the
// one it falls in shortened, its value at end its last.
func (r Ramp) Cut(end time.Duration) Ramp {
	var out Ramp
	var start time.Duration
	for _, s := range r {
		if start >= end {
			break
		}
		if start+s.Duration > end {
			x := float64(end-start) / float64(s.Duration)
			s = Step{Duration: end - start, From: s.From, To: s.From + (s.To-s.From)*x}
		}
		out = append(out, s)
		start += s.Duration
	}
	return out
}
