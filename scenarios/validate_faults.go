package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/yamlstrict"
)

func (c *checker) faults() {
	kinds := append(faults.Kinds(), faults.KindNemesis, faults.KindConsumerCut)
	sum := 0.0
	for i, f := range c.s.Faults {
		at := fmt.Sprintf("faults[%d]", i)
		if f.Kind == faults.KindNemesis {
			c.nemesis(at, f)
			continue
		}
		if f.Kind == faults.KindConsumerCut {
			c.consumerCut(at, f)
			continue
		}
		kindOK := true
		if f.Kind == "" {
			c.add(at+".kind", "kind is required", "kind: one of "+strings.Join(kinds, ", "))
			kindOK = false
		} else if !slices.Contains(kinds, f.Kind) {
			c.add(at+".kind", fmt.Sprintf("unknown fault %q", f.Kind), yamlstrict.Suggest(f.Kind, kinds, "faults"))
			kindOK = false
		}
		if f.Rate == 0 && !c.s.set(at+".rate") {
			c.add(at+".rate", "rate is required", faultHint(f.Kind, "rate"))
		}
		if f.Rate > 0 && f.Rate <= 1 {
			sum += f.Rate
		}
		err := faults.Check(f) // a relative after is resolved before the load, by a calibration
		for _, se := range specErrors(err) {
			if se.Field == "kind" && !kindOK {
				continue
			}
			c.add(at+"."+se.Field, se.Problem, faultHint(f.Kind, se.Field))
		}
		if err != nil && len(specErrors(err)) == 0 {
			c.add(at, err.Error(), "")
		}
	}
	if sum > 1+1e-9 {
		c.add("faults", fmt.Sprintf("fault rates add up to %g, above 1", sum), "at most one fault hits an attempt: lower the rates so they sum to 1 or less")
	}
}

// specErrors flattens the *faults.SpecError values joined in err.
func specErrors(err error) []*faults.SpecError {
	var out []*faults.SpecError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if se, ok := err.(*faults.SpecError); ok {
			out = append(out, se)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// faultHint is the hint for a problem with field, a parameter of a kind
// fault or its kind, from the parameters package faults declares: the
// parameter's own hint, the advice to remove a parameter the kind does not
// take, or else the hint for the kind's own parameter.
func faultHint(kind, field string) string {
	if _, ok := nemesisHints[field]; ok {
		return "remove " + field + " from this " + kind + " fault: only a nemesis takes it"
	}
	if p, ok := faults.LookupParam(field); ok {
		switch {
		case p.Kind == "":
			return p.Hint
		case p.Kind != kind:
			return "remove " + field + " from this " + kind + " fault"
		}
	}
	for _, p := range faults.ParamsOf(kind) {
		if p.Kind == kind {
			return p.Hint
		}
	}
	return ""
}
