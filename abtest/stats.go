package abtest

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Percentiles are the percentiles an A/B compares, named as reports name
// them.
var Percentiles = []struct {
	Name string
	P    float64
}{{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p999", 99.9}}

// DefaultResamples is how many bootstrap resamples Compare draws when asked
// for 0.
const DefaultResamples = 1000

// Delta is A − B at one percentile.
type Delta struct {
	Name string  // "p50"
	P    float64 // 50
	A, B float64 // each arm's latency, ms
	MS   float64 // A − B, ms
	Pct  float64 // (A − B) / B × 100; 0 when B is 0
	// CI is the 95% confidence interval of MS, CIPct of Pct, from the
	// block bootstrap.
	CI, CIPct [2]float64
}

// Compare returns A − B at each of Percentiles with a 95% confidence
// interval from a paired block bootstrap: resamples times, as many rounds
// as were measured are drawn with replacement, each round bringing its A
// block and its B block, and the difference of the pooled percentiles is
// taken; the interval is the 2.5th to 97.5th percentile of those
// differences. Rounds keep their pairing, so drift that hit both arms
// cancels out of the interval as it does out of the estimate.
func Compare(r *Result, resamples int, rng *rand.Rand) []Delta {
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	n := min(len(r.A.blocks), len(r.B.blocks))
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	out := make([]Delta, len(Percentiles))
	for i, p := range Percentiles {
		a := float64(quantile(r.A.blocks, all, p.P)) / 1000
		b := float64(quantile(r.B.blocks, all, p.P)) / 1000
		out[i] = Delta{Name: p.Name, P: p.P, A: a, B: b, MS: a - b, Pct: pct(a, b)}
	}
	if n == 0 {
		return out
	}
	ms := make([][]float64, len(Percentiles))
	pcts := make([][]float64, len(Percentiles))
	pick := make([]int, n)
	for range resamples {
		for j := range pick {
			pick[j] = rng.IntN(n)
		}
		for i, p := range Percentiles {
			a := float64(quantile(r.A.blocks, pick, p.P)) / 1000
			b := float64(quantile(r.B.blocks, pick, p.P)) / 1000
			ms[i] = append(ms[i], a-b)
			pcts[i] = append(pcts[i], pct(a, b))
		}
	}
	for i := range out {
		out[i].CI = interval(ms[i])
		out[i].CIPct = interval(pcts[i])
	}
	return out
}

func pct(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return (a - b) / b * 100
}

// interval is the 2.5th and 97.5th percentiles of xs (sorted in place).
func interval(xs []float64) [2]float64 {
	slices.Sort(xs)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(xs)))) - 1
		return xs[min(max(i, 0), len(xs)-1)]
	}
	return [2]float64{at(0.025), at(0.975)}
}

// quantile is the p-th percentile (0–100) of the union of the sorted
// blocks picked (an index may repeat): the smallest value v such that at
// least ceil(p/100 × N) of the N values are ≤ v, found by bisection on v,
// so no resample is ever merged or sorted. 0 for no values.
func quantile(blocks [][]int64, picked []int, p float64) int64 {
	total := 0
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, i := range picked {
		b := blocks[i]
		if len(b) == 0 {
			continue
		}
		total += len(b)
		lo, hi = min(lo, b[0]), max(hi, b[len(b)-1])
	}
	if total == 0 {
		return 0
	}
	rank := max(int(math.Ceil(p/100*float64(total))), 1)
	atMost := func(v int64) int {
		c := 0
		for _, i := range picked {
			b := blocks[i]
			c += sort.Search(len(b), func(k int) bool { return b[k] > v })
		}
		return c
	}
	// smallest v in [lo, hi] with atMost(v) >= rank
	for lo < hi {
		mid := lo + (hi-lo)/2
		if atMost(mid) >= rank {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
