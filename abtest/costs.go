package abtest

import (
	"context"
	"math/rand/v2"
	"net/url"
	"time"

	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Costs measures what the protection of each operation among pairs
// costs, as the demo shows it: for each protected built-in scenario with
// a naive variant (scenarios.HasNaive), its request (A) against the naive
// one (B), run with o (o.Runner carries the target; o.Rand should be
// random, as a stateful target keeps the keys of earlier runs). A pair
// whose ops need a setup or a read before each op (the compare-and-set
// debit) is left out, and so is a pair of requests measured already. The
// deltas' intervals take resamples from a source seeded with seed. A
// pair that could not be measured, or whose arm did not hold the rate,
// says why in its Err; Costs stops after the pair during which ctx ends.
func Costs(ctx context.Context, pairs []string, o Options, resamples int, seed uint64) []reports.DemoCost {
	var out []reports.DemoCost
	seen := map[string]bool{}
	for _, pair := range pairs {
		if !scenarios.HasNaive(pair) {
			continue
		}
		a, errA := scenarios.Builtin(pair)
		b, errB := scenarios.Builtin(pair + "-naive")
		if errA != nil || errB != nil || len(a.Setup) > 0 || len(b.Setup) > 0 || a.Operation.Before != nil || b.Operation.Before != nil {
			continue
		}
		what := a.Operation.Method + " " + redact.Path(a.Operation.Path) + " vs " + b.Operation.Method + " " + redact.Path(b.Operation.Path)
		if seen[what] {
			continue
		}
		seen[what] = true
		c := reports.DemoCost{What: what}
		res, err := Run(ctx, a, b, o)
		switch {
		case err != nil:
			c.Err = err.Error()
		default:
			ra, rb := res.A.Report(), res.B.Report()
			c.A, c.B = &ra, &rb
			c.Deltas = ReportDeltas(Compare(res, resamples, rand.New(rand.NewPCG(seed, 0xde70))))
			if ok, why := res.Held(); !ok {
				c.Err = why
			}
		}
		out = append(out, c)
		if ctx.Err() != nil {
			break
		}
	}
	return out
}

// CostsOn is Costs against the lab at target (and targets, its
// instances behind a balancer, when several), with o's runner pointed
// at them and new keys from a random source, so that a stateful lab
// never meets an earlier demo's keys.
func CostsOn(ctx context.Context, pairs []string, o Options, target string, targets []string, getenv func(string) string, seed uint64) []reports.DemoCost {
	base, err := url.Parse(target)
	if err != nil {
		return nil
	}
	o.Runner = runner.Options{Target: base, Env: getenv, Seed: seed, RequestTimeout: 10 * time.Second}
	for _, t := range targets {
		if u, err := url.Parse(t); err == nil {
			o.Runner.Targets = append(o.Runner.Targets, u)
		}
	}
	o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	return Costs(ctx, pairs, o, 400, seed)
}
