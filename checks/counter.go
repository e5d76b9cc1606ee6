package checks

import (
	"fmt"

	"github.com/idemcheck/idemcheck/history"
)

// checkCounter checks that the counter moved by at least one per
// acknowledged key and at most one per acknowledged or indeterminate
// operation. Never-sent operations add nothing.
type counterCheck struct {
	obs                  *history.Reading
	acked, indet, lo, hi int64
	ops                  int
	suspects             []Example
}

func (c *counterCheck) add(h *history.History) {
	g := groupKeys(h)
	for i := range h.Ops {
		if !g.leader(i) {
			continue
		}
		t := g.tally(i)
		c.acked += int64(t.acked)
		c.indet += int64(t.indet)
		if t.acked > 0 {
			c.lo++ // a server deduplicating by key alone counts a shared key once
		}
		c.hi += int64(t.acked + t.indet)
	}
	c.ops += len(h.Ops)
	c.suspects = mergeExamples(c.suspects, counterSuspects(g))
}

func (c *counterCheck) verdict(v Verdict) Verdict {
	obs := c.obs
	acked, indet, lo, hi := c.acked, c.indet, c.lo, c.hi
	before, after := *obs.Before, *obs.After
	d := &CounterDetail{Before: before, After: after, Acked: acked, Indeterminate: indet, Min: lo, Max: hi}
	v.Counter = d
	v.Checked = c.ops
	v.Indeterminate = int(indet)
	delta := after - before

	name := obs.Oracle
	if name == "" {
		name = v.Oracle
	}
	ops := fmt.Sprintf("%d acknowledged", acked)
	if indet > 0 {
		ops += fmt.Sprintf(" and %d indeterminate", indet)
	}
	if acked+indet == 1 {
		ops += " op"
	} else {
		ops += " ops"
	}
	v.Summary = fmt.Sprintf("%s %d -> %d for %s (allowed %d..%d)", name, before, after, ops, lo, hi)
	switch {
	case delta > hi:
		v.Status = Fail
		v.Extra = int(delta - hi)
		v.Violations = v.Extra
		v.Summary += fmt.Sprintf(", %d too many", delta-hi)
		v.Examples = c.suspects
	case delta < lo:
		v.Status = Fail
		v.Missing = int(lo - delta)
		v.Violations = v.Missing
		v.Summary += fmt.Sprintf(", %d too few", lo-delta)
	default:
		v.Status = Pass
	}
	return v
}

// counterSuspects lists ops that could have been counted more than once:
// more than one of their attempts may have reached the server. A counter
// is not per key, so their Effects are 0 (unknown).
func counterSuspects(g *keys) []Example {
	ex := []Example{}
	for i := range g.h.Ops {
		if len(ex) == MaxExamples {
			break
		}
		if !g.leader(i) {
			continue
		}
		reached := 0
		atts := g.h.AttemptsOf(i)
		for j := range atts {
			if atts[j].Outcome != history.Fail {
				reached++
			}
		}
		if reached < 2 && !g.shared(i) {
			continue
		}
		t := g.tally(i)
		if t.acked+t.indet == 0 {
			continue
		}
		w := "exactly 1"
		if t.acked == 0 {
			w = "0 or 1"
		}
		if t.units > 1 {
			w = want(min(t.acked, 1), t.acked+t.indet, true)
		}
		op := g.h.Ops[i]
		ex = append(ex, Example{
			Op: op.ID, Key: op.Key, User: op.User, Want: w,
			Problem:  fmt.Sprintf("suspect: %s may have reached the server and been counted", plural(reached, "attempt", "attempts")),
			Attempts: g.attempts(i),
		})
	}
	return ex
}
