package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

// mismatchWant is what a mismatch attempt must be answered.
const mismatchWant = "a 4xx (422)"

// checkPayloadMismatch checks every answered mismatch attempt (the same key
// sent again with another payload, history.FaultMismatch): it must be rejected
// with a 4xx, 422 per the IETF Idempotency-Key draft (409 and 400 are
// common too). A 2xx is a silent replay of the first answer or a second
// execution; which one is for at_most_once on an oracle to tell. Checked
// counts the ops with at least one answered mismatch attempt.
type mismatchCheck struct {
	v         Verdict // counts and examples so far
	statuses  map[int]int
	sent, bad int
	blame     blame // the violating ops' faults
}

func (c *mismatchCheck) blamed() *blame { return &c.blame }

func (c *mismatchCheck) add(h *history.History) {
	v := &c.v
	if c.statuses == nil {
		c.statuses = map[int]int{}
	}
	statuses := c.statuses
	var examples []Example
	for i := range h.Ops {
		atts := h.AttemptsOf(i)
		sent, answered, wrong := false, false, -1
		for j := range atts {
			a := &atts[j]
			if a.Fault != history.FaultMismatch {
				continue
			}
			c.sent++
			sent = true
			// No answer, or a 5xx (the server failed, perhaps closed for a
			// dependency): neither a replay nor a rejection. A second
			// effect, if any, shows in at_most_once.
			if a.Outcome != history.OK || a.Status >= 500 {
				continue
			}
			answered = true
			statuses[a.Status]++
			if a.Status < 400 {
				c.bad++
				if wrong < 0 {
					wrong = j
				}
			}
		}
		if !answered {
			if sent {
				v.NotJudged++ // no answer, or a 5xx: neither accepted nor rejected
			}
			continue
		}
		v.Checked++
		if wrong < 0 {
			continue
		}
		v.Violations++
		c.blame.add(&h.Meta, atts)
		if len(examples) < MaxExamples {
			op := h.Ops[i]
			examples = append(examples, Example{
				Op: op.ID, Key: op.Key, User: op.User, Want: mismatchWant,
				Problem:  mismatchProblem(atts[wrong]),
				Attempts: exampleAttempts(h, atts),
			})
		}
	}
	v.Examples = mergeExamples(v.Examples, examples)
}

func (c *mismatchCheck) verdict(v Verdict) Verdict {
	v.Checked, v.Violations, v.Examples = c.v.Checked, c.v.Violations, c.v.Examples
	v.NotJudged = c.v.NotJudged
	statuses, sent, bad := c.statuses, c.sent, c.bad
	rest := ""
	if v.NotJudged > 0 {
		rest = fmt.Sprintf("; %d not judged (no answer, or a 5xx)", v.NotJudged)
	}
	switch {
	case v.Checked == 0 && sent == 0:
		return unknown(v, "no attempt sent another payload under an op's key (operation.replay.body), or no op was acknowledged")
	case v.Checked == 0:
		return unknown(v, fmt.Sprintf("none of %s with another payload got an answer other than a 5xx", plural(sent, "attempt", "attempts")))
	case v.Violations == 0:
		v.Status = Pass
		v.Summary = fmt.Sprintf("%s sent another payload under their key, every answer rejected it (%s)%s",
			plural(v.Checked, "op", "ops"), statusText(statuses), rest)
	default:
		v.Status = Fail
		v.Summary = fmt.Sprintf("%d of %s that sent another payload under their key had it accepted (%s; %s)%s",
			v.Violations, plural(v.Checked, "op", "ops"), plural(bad, "answer not a 4xx", "answers not a 4xx"), statusText(statuses), rest)
	}
	return v
}

func mismatchProblem(a history.Attempt) string {
	if a.Acked() {
		return fmt.Sprintf("same key, other payload: answered %d — a silent replay or a second execution", a.Status)
	}
	return fmt.Sprintf("same key, other payload: answered %d, want a 4xx rejection (422)", a.Status)
}

// statusText lists statuses with their counts, by status: "201 ×3, 422 ×61".
func statusText(m map[int]int) string {
	codes := make([]int, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d ×%d", c, m[c])
	}
	return strings.Join(parts, ", ")
}
