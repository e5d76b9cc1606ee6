package checks

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

// noun names what is counted per key: charges' effects, or debits applied.
type noun struct{ one, many string }

var (
	effectNoun  = noun{"effect", "effects"}
	appliedNoun = noun{"application", "applications"}
)

func (n noun) count(k int) string { return plural(k, n.one, n.many) }

// keyResult is the per-key part of at_most_once, exactly_once and
// conditional_update.
type keyResult struct {
	checked, violations, extra, missing int
	over, under                         int // keys with too many, too few effects
	acked, indet, notSent, rejected     int
	indetApplied                        int // effects of indeterminate operations
	examples                            []Example
	blame                               blame // the violating keys' faults
}

// add sums o into r; the examples kept are the first by op of both.
func (r *keyResult) add(o keyResult) {
	r.checked += o.checked
	r.violations += o.violations
	r.extra += o.extra
	r.missing += o.missing
	r.over += o.over
	r.under += o.under
	r.acked += o.acked
	r.indet += o.indet
	r.notSent += o.notSent
	r.rejected += o.rejected
	r.indetApplied += o.indetApplied
	r.examples = mergeExamples(r.examples, o.examples)
	r.blame.merge(o.blame)
}

// fill copies the counts and examples into a verdict.
func (r *keyResult) fill(v *Verdict) {
	v.Checked, v.Violations, v.Indeterminate = r.checked, r.violations, r.indet
	v.Extra, v.Missing, v.Examples = r.extra, r.missing, r.examples
}

// perKey compares each key's effect count with what its operations allow:
// at most one per operation, or (exact) one per acknowledged operation,
// none per never-sent one and 0 or 1 per indeterminate one.
func perKey(g *keys, effects map[string]int, exact bool, n noun) keyResult {
	var r keyResult
	r.examples = []Example{}
	ops := g.h.Ops
	for i := range ops {
		if !g.leader(i) {
			continue
		}
		r.checked++
		t := g.tally(i)
		r.acked += t.acked
		r.indet += t.indet
		r.notSent += t.notSent
		r.rejected += t.rejected
		e := effects[ops[i].Key]
		lo, hi := 0, t.units
		if exact {
			lo, hi = t.acked, t.acked+t.indet
		}
		if exact && t.indet > 0 && e > t.acked {
			r.indetApplied += min(e-t.acked, t.indet)
		}
		if e >= lo && e <= hi {
			continue
		}
		r.violations++
		r.blame.add(&g.h.Meta, g.attempts(i))
		if e > hi {
			r.over++
			r.extra += e - hi
		} else {
			r.under++
			r.missing += lo - e
		}
		if len(r.examples) < MaxExamples {
			r.examples = append(r.examples, Example{
				Op: ops[i].ID, Key: ops[i].Key, User: ops[i].User, Effects: e,
				Want:     want(lo, hi, exact),
				Problem:  problem(g, i, t, e, lo, hi, exact, n),
				Attempts: g.attempts(i),
			})
		}
	}
	return r
}

func want(lo, hi int, exact bool) string {
	switch {
	case !exact:
		return fmt.Sprintf("at most %d", hi)
	case lo == hi:
		return fmt.Sprintf("exactly %d", lo)
	case lo+1 == hi:
		return fmt.Sprintf("%d or %d", lo, hi)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

func problem(g *keys, i int, t tally, e, lo, hi int, exact bool, n noun) string {
	if t.units > 1 || g.shared(i) {
		return fmt.Sprintf("key used by %d ops (%s): %s, want %s",
			g.ops(i), tallyText(t), n.count(e), want(lo, hi, exact))
	}
	if e > hi {
		extra := fmt.Sprintf("(%d extra)", e-hi)
		switch {
		case !exact:
			return fmt.Sprintf("%s for one key %s", n.count(e), extra)
		case t.acked == 1:
			return fmt.Sprintf("%s for one acknowledged op %s", n.count(e), extra)
		case t.notSent == 1:
			return fmt.Sprintf("%s although no attempt was sent (every attempt failed before writing)", n.count(e))
		case t.rejected == 1:
			return fmt.Sprintf("%s although every answer rejected it (%s)", n.count(e), rejections(g.h.AttemptsOf(i)))
		default:
			return fmt.Sprintf("%s for one op whose outcome is unknown %s", n.count(e), extra)
		}
	}
	status := 0
	for _, a := range g.h.AttemptsOf(i) {
		if a.Acked() && a.Fault != history.FaultMismatch {
			status = a.Status
			break
		}
	}
	return fmt.Sprintf("acknowledged with %d but %s (a lying success)", status, noneOf(e, n))
}

func noneOf(e int, n noun) string {
	if e == 0 {
		return "no " + n.one
	}
	return n.count(e)
}

func tallyText(t tally) string {
	var parts []string
	if t.acked > 0 {
		parts = append(parts, fmt.Sprintf("%d acknowledged", t.acked))
	}
	if t.indet > 0 {
		parts = append(parts, fmt.Sprintf("%d indeterminate", t.indet))
	}
	if t.notSent > 0 {
		parts = append(parts, fmt.Sprintf("%d never sent", t.notSent))
	}
	if t.rejected > 0 {
		parts = append(parts, fmt.Sprintf("%d rejected", t.rejected))
	}
	return plural(t.units, "user", "users") + ": " + strings.Join(parts, ", ")
}

// effectsCheck is at_most_once (exact false) and exactly_once (exact true).
//
// A key is judged on its total effects, whatever it had before the run: a
// key an earlier run already sent (the same --seed and --key-nonce, or a
// templated key) must still have exactly one, replayed or not. (Counting
// only what the run added would accuse a correct replay and clear a
// second charge.)
type effectsCheck struct {
	effects map[string]int
	exact   bool
	r       keyResult
	// acked counts the acknowledged ops, seen whether the reading holds an
	// effect of any key of the run: blind's figures.
	acked int
	seen  bool
}

func (c *effectsCheck) add(h *history.History) {
	c.r.add(perKey(groupKeys(h), c.effects, c.exact, effectNoun))
	for i, op := range h.Ops {
		if history.State(h.AttemptsOf(i)) == history.Acked {
			c.acked++
		}
		if !c.seen && c.effects[op.Key] > 0 {
			c.seen = true
		}
	}
}

func (c *effectsCheck) blamed() *blame { return &c.r.blame }

func (c *effectsCheck) verdict(v Verdict) Verdict {
	if reason := blind(c.acked, c.seen); reason != "" {
		return unknown(v, reason)
	}
	r, exact := c.r, c.exact
	r.fill(&v)
	v.Status = Pass
	if r.violations > 0 {
		v.Status = Fail
	}
	switch {
	case !exact && r.violations == 0:
		v.Summary = fmt.Sprintf("%s, none with more than one effect", plural(r.checked, "key", "keys"))
	case !exact:
		v.Summary = fmt.Sprintf("%d of %s %s more than one effect (%d extra)",
			r.violations, plural(r.checked, "key", "keys"), hasHave(r.violations), r.extra)
	case r.violations == 0:
		v.Summary = fmt.Sprintf("%s hold exactly once: %s", plural(r.checked, "key", "keys"), stateText(r))
	default:
		var parts []string
		if r.extra > 0 {
			parts = append(parts, fmt.Sprintf("%d extra %s", r.extra, pluralWord(r.extra, "effect", "effects")))
		}
		if r.missing > 0 {
			parts = append(parts, fmt.Sprintf("%d acknowledged %s with no effect", r.missing, pluralWord(r.missing, "op", "ops")))
		}
		v.Summary = fmt.Sprintf("%d of %s broke exactly-once: %s", r.violations, plural(r.checked, "key", "keys"), strings.Join(parts, ", "))
	}
	return v
}

func stateText(r keyResult) string {
	s := fmt.Sprintf("%d acknowledged", r.acked)
	if r.indet > 0 {
		s += fmt.Sprintf(", %d indeterminate (%d applied)", r.indet, r.indetApplied)
	}
	if r.notSent > 0 {
		s += fmt.Sprintf(", %d never sent", r.notSent)
	}
	if r.rejected > 0 {
		s += fmt.Sprintf(", %d rejected", r.rejected)
	}
	return s
}

func hasHave(n int) string { return pluralWord(n, "has", "have") }

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// rejections lists the 4xx answers an op got, e.g. "409, 409".
func rejections(as []history.Attempt) string {
	var out []string
	for i := range as {
		if as[i].Rejection() && as[i].Fault != history.FaultMismatch {
			out = append(out, fmt.Sprint(as[i].Status))
		}
	}
	return strings.Join(out, ", ")
}

// blind says why an effects reading sees nothing of this run although
// ops were acknowledged (an oracle reading the wrong place, a pattern
// that matches no key), or "": seen is whether any key of the run has an
// effect. Judging such a reading would pass a broken API (at_most_once)
// or accuse a correct one (exactly_once).
func blind(acked int, seen bool) string {
	if acked == 0 || seen {
		return ""
	}
	return fmt.Sprintf("the oracle sees none of this run's keys although %s acknowledged: is it reading the right place (path, query, key pattern)?",
		plural(acked, "op was", "ops were"))
}
