package faults

import (
	"errors"
	"fmt"
	"slices"
)

// Plan picks the fault for each (op, attempt) from a seed. Pick is a pure
// function of (seed, op, attempt), so the same seed gives the same fault for
// the same attempt whatever the scheduling, and a run can be replayed.
//
// Probability and targeting live here, not in the faults: one uniform draw in
// [0, 1) per attempt is compared with the cumulative rates of the specs, in
// order, so spec i owns the interval [r0+…+r(i-1), r0+…+ri). When the draw
// lands in a spec whose Attempts exclude this attempt, the attempt gets no
// fault, so each spec hits exactly its Rate of the attempts it targets.
type Plan struct {
	seed   uint64
	faults []Fault
	upper  []float64 // cumulative rates: faults[i] owns [upper[i-1], upper[i])
	only   [][]int   // attempt numbers per fault; nil = any
}

// rateSlack absorbs rounding when rates such as 0.1 × 10 sum to 1.
const rateSlack = 1e-9

// NewPlan validates every spec (see New) and checks that the rates sum to at
// most 1. The error joins every problem, each prefixed with the spec's index.
// A nemesis (KindNemesis) is not placed on attempts: it is left out here,
// and NewNemeses schedules it.
func NewPlan(seed uint64, specs []Spec) (*Plan, error) {
	p := &Plan{seed: seed}
	var errs []error
	sum := 0.0
	for i, s := range specs {
		if s.Kind == KindNemesis || s.Kind == KindConsumerCut {
			continue // not a per-attempt fault: a run's trial runs it beside the load
		}
		f, err := New(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("faults[%d]: %w", i, err))
			continue
		}
		sum += s.Rate
		p.faults = append(p.faults, f)
		p.upper = append(p.upper, sum)
		var only []int
		if len(s.Attempts) > 0 {
			only = slices.Clone(s.Attempts)
		}
		p.only = append(p.only, only)
	}
	if sum > 1+rateSlack {
		errs = append(errs, specErr("rate", "the fault rates sum to %.4g, more than 1 (they are shares of the same attempts)", sum))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("fault plan: %w", errors.Join(errs...))
	}
	return p, nil
}

// Pick returns the fault for attempt number attempt (1 = first send) of op,
// or nil for none. It allocates nothing, takes no lock and is safe for
// concurrent use. A nil Plan picks no fault.
func (p *Plan) Pick(op, attempt int) Fault {
	if p == nil || len(p.faults) == 0 {
		return nil
	}
	u := Unit(p.seed, uint64(op), uint64(attempt))
	for i, up := range p.upper {
		if u < up {
			if p.only[i] != nil && !slices.Contains(p.only[i], attempt) {
				return nil
			}
			return p.faults[i]
		}
	}
	return nil
}

// Hash is a well-mixed hash that depends only on its arguments: the
// finaliser of Steele, Lea and Flood's SplitMix64 applied to seed, then
// chained over each of xs (h = mix(h ^ x)). Hash(x) alone is a bijection.
// The fault plan's picks and the runner's backoff jitter both derive from
// it, so a seed reproduces a run.
func Hash(seed uint64, xs ...uint64) uint64 {
	h := splitmix64(seed)
	for _, x := range xs {
		h = splitmix64(h ^ x)
	}
	return h
}

// Unit is a uniform number in [0, 1) that depends only on its arguments:
// the top 53 bits of Hash(seed, xs...).
func Unit(seed uint64, xs ...uint64) float64 {
	return float64(Hash(seed, xs...)>>11) * (1.0 / (1 << 53))
}

// splitmix64 is the finaliser of SplitMix64: a bijective, well-mixed hash
// of a 64-bit value.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
