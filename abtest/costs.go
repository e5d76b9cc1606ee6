package abtest

import (
	"github.com/idemcheck/idemcheck/internal/redact"

	"context"
	"math/rand/v2"

	"github.com/idemcheck/idemcheck/reports"
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
