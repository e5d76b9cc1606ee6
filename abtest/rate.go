package abtest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/measure"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// MaxProbeRate is the highest rate FindRate tries by default.
const MaxProbeRate = 50000

// RateOptions say how FindRate searches.
type RateOptions struct {
	// Start is the first rate tried (default 100 ops/s), Max the highest
	// (default MaxProbeRate).
	Start, Max float64
	// Probe is how long each rate is tried (default 1s).
	Probe time.Duration
	// MaxInFlight caps concurrent ops; 0 means DefaultMaxInFlight.
	MaxInFlight int
	// Runner carries the target and transport, as in Options.
	Runner runner.Options
	// Rand draws the probes' key nonces; nil seeds one from Runner.Seed.
	Rand *rand.Rand
	// OnProbe, when not nil, hears each rate tried and whether it held.
	OnProbe func(rate float64, held bool)
}

// Probes estimates the most requests FindRate sends for one arm.
func Probes(o RateOptions) int {
	o = o.defaults()
	n, r := 0.0, o.Start
	for ; r <= o.Max; r *= 2 {
		n += r * o.Probe.Seconds()
	}
	n += 3 * r / 2 * o.Probe.Seconds() // the bisection's three probes, at most
	return int(n)
}

// AutoOps estimates the most requests a bench at the rate FindRates
// finds sends: both arms' rate searches (o), then Run with ab at half the
// highest rate the search tries.
func AutoOps(ab Options, o RateOptions) int {
	ab.Rate = o.defaults().Max / 2
	return 2*Probes(o) + Ops(ab)
}

func (o RateOptions) defaults() RateOptions {
	if o.Start <= 0 {
		o.Start = 100
	}
	if o.Max <= 0 {
		o.Max = MaxProbeRate
	}
	if o.Probe <= 0 {
		o.Probe = time.Second
	}
	return o
}

// FindRate returns the highest rate sc sustains: a probe at the rate must
// hold it (Arm.Held) with a p50 latency no more than 5× (plus 2 ms) the
// p50 at the first rate, so queueing that has started counts as not
// sustained. It doubles the rate from Start until a probe fails, then
// bisects three times between the last rate that held and the first that
// did not. It returns 0 when even Start does not hold.
func FindRate(ctx context.Context, sc *scenarios.Scenario, o RateOptions) (float64, error) {
	o = o.defaults()
	rng := o.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(o.Runner.Seed, 0x7a7e))
	}
	var base float64 // p50 at Start, ms
	probe := func(rate float64) (bool, error) {
		ro := o.Runner
		ro.KeyNonce = rng.Uint64() | 1
		h, err := runner.Run(ctx, bare(sc, rate, o.Probe, o.MaxInFlight), ro)
		if err != nil {
			return false, err
		}
		a := &Arm{Name: sc.Name, Hist: measure.NewHistogram()}
		a.add(h, rate, o.Probe)
		held, _ := a.Held(rate)
		p50 := a.Percentile(50)
		if base == 0 {
			base = p50
		}
		held = held && p50 <= 5*base+2
		if o.OnProbe != nil {
			o.OnProbe(rate, held)
		}
		return held, nil
	}
	good, bad := 0.0, 0.0
	for r := o.Start; r <= o.Max; r *= 2 {
		ok, err := probe(r)
		if err != nil {
			return 0, fmt.Errorf("rate %.0f: %w", r, err)
		}
		if !ok {
			bad = r
			break
		}
		good = r
	}
	if bad == 0 || good == 0 {
		return good, nil
	}
	for range 3 {
		mid := (good + bad) / 2
		ok, err := probe(mid)
		if err != nil {
			return 0, fmt.Errorf("rate %.0f: %w", mid, err)
		}
		if ok {
			good = mid
		} else {
			bad = mid
		}
	}
	return good, nil
}

// ParseRate reads a rate per arm: ops per second (200, or 200/s), or
// "auto" for the rate FindRates finds.
func ParseRate(s string) (rate float64, auto bool, err error) {
	if s == "auto" {
		return 0, true, nil
	}
	rate, err = strconv.ParseFloat(strings.TrimSuffix(s, "/s"), 64)
	if err != nil || rate <= 0 || math.IsInf(rate, 0) {
		return 0, false, fmt.Errorf("rate %q: want ops per second or auto", s)
	}
	return rate, false, nil
}

// FindRates finds the highest rate each arm sustains (FindRate, a then b)
// and the rate to bench them at: half the lower, in whole ops per second.
// onArm, when not nil, hears "A" or "B" before each arm's search.
func FindRates(ctx context.Context, a, b *scenarios.Scenario, o RateOptions, onArm func(arm string)) (maxA, maxB, rate float64, err error) {
	for _, arm := range []struct {
		name string
		sc   *scenarios.Scenario
		max  *float64
	}{{"A", a, &maxA}, {"B", b, &maxB}} {
		if onArm != nil {
			onArm(arm.name)
		}
		if *arm.max, err = FindRate(ctx, arm.sc, o); err != nil {
			return 0, 0, 0, err
		}
	}
	return maxA, maxB, math.Floor(min(maxA, maxB) / 2), nil
}
