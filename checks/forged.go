package checks

import (
	"fmt"

	"github.com/idemcheck/idemcheck/history"
)

// forgedCheck judges the forged webhook deliveries (ops whose Check is
// history.CheckForged: every attempt signed with another key or stamped
// outside the tolerance): every answer must be a 4xx, and with an effects
// oracle the key must have no effect. A 2xx is a forged delivery
// accepted; a 5xx one the receiver went on to process, or crashed on;
// an effect one applied. Checked counts the forged ops with an answer.
type forgedCheck struct {
	obs      *history.Reading // nil: answers only
	v        Verdict
	statuses map[int]int
	sent     int
	blame    blame
}

func (c *forgedCheck) blamed() *blame { return &c.blame }

func (c *forgedCheck) add(h *history.History) {
	if c.statuses == nil {
		c.statuses = map[int]int{}
	}
	var examples []Example
	for i := range h.Ops {
		op := h.Ops[i]
		atts := h.AttemptsOf(i)
		c.sent++
		answered := false
		problem := ""
		for _, a := range atts {
			if a.Outcome != history.OK {
				continue
			}
			answered = true
			c.statuses[a.Status]++
			switch {
			case problem != "":
			case a.Acked():
				problem = fmt.Sprintf("a forged delivery was accepted: answered %d", a.Status)
			case a.Status >= 500:
				problem = fmt.Sprintf("a forged delivery was answered %d, not a 4xx: it got past verification, or the receiver failed on it", a.Status)
			case a.Status < 400:
				problem = fmt.Sprintf("a forged delivery was answered %d, not a 4xx", a.Status)
			}
		}
		effects := 0
		if c.obs != nil {
			effects = c.obs.Effects[op.Key]
			if effects > 0 {
				problem = fmt.Sprintf("a forged delivery had %s", plural(effects, "effect", "effects"))
			}
		}
		if !answered && effects == 0 {
			c.v.NotJudged++ // no answer, no effect: nothing to hold it to
			continue
		}
		c.v.Checked++
		if problem == "" {
			continue
		}
		c.v.Violations++
		c.v.Extra += effects
		c.blame.add(&h.Meta, atts)
		if len(examples) < MaxExamples {
			examples = append(examples, Example{Op: op.ID, Key: op.Key, User: op.User, Effects: effects,
				Want: "every answer a 4xx, no effect", Problem: problem, Attempts: exampleAttempts(h, atts)})
		}
	}
	c.v.Examples = mergeExamples(c.v.Examples, examples)
}

func (c *forgedCheck) verdict(v Verdict) Verdict {
	v.Checked, v.Violations, v.Examples, v.NotJudged, v.Extra = c.v.Checked, c.v.Violations, c.v.Examples, c.v.NotJudged, c.v.Extra
	how := "judged from the answers (no effects oracle)"
	if c.obs != nil {
		how = "and no effect"
	}
	switch {
	case c.sent == 0:
		return unknown(v, "no forged delivery was sent (operation.webhook.forged)")
	case v.Checked == 0:
		return unknown(v, fmt.Sprintf("none of %s got an answer", plural(c.sent, "forged delivery", "forged deliveries")))
	case v.Violations == 0:
		v.Status = Pass
		v.Summary = fmt.Sprintf("%s refused (%s), %s", plural(v.Checked, "forged event", "forged events"), statusText(c.statuses), how)
	default:
		v.Status = Fail
		v.Summary = fmt.Sprintf("%d of %s not refused (%s)", v.Violations, plural(v.Checked, "forged event", "forged events"), statusText(c.statuses))
		if v.Extra > 0 {
			v.Summary += fmt.Sprintf(": %s applied", plural(v.Extra, "effect", "effects"))
		}
	}
	return v
}
