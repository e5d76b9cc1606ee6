package checks

import (
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// DefaultSettleGrace is how long after a key's first attempt ended an
// in-flight answer (409) is still allowed, when the scenario sets none.
const DefaultSettleGrace = 2 * time.Second

func settleGrace(h *history.History) time.Duration {
	if g := h.Meta.Judge.SettleGrace; g > 0 {
		return g
	}
	return DefaultSettleGrace
}

// inFlight is the profile's in-flight answer; 409 when it names none.
func inFlight(h *history.History) []string {
	if p := h.Meta.Judge.Profile.InFlight; len(p) > 0 {
		return p
	}
	return []string{"409"}
}

// group is the attempts of one logical operation: the ops that share a
// key and a user.
type group struct {
	op   history.Op // its first op
	atts []history.Attempt
}

// groups gathers the attempts of every logical operation, in op order,
// leaving out sends of another payload (mismatch), which are another
// request.
func groups(h *history.History) []group {
	idx := map[[2]string]int{}
	var out []group
	for i, op := range h.Ops {
		k := [2]string{op.Key, op.User}
		j, ok := idx[k]
		if !ok {
			j = len(out)
			idx[k] = j
			out = append(out, group{op: op})
		}
		for _, a := range h.AttemptsOf(i) {
			if a.Fault != history.FaultMismatch {
				out[j].atts = append(out[j].atts, a)
			}
		}
	}
	return out
}

// firstEnd is when the first attempt of a group ended (answered, or given
// up on by the client): the work it started may run until then at least.
func firstEnd(atts []history.Attempt) (time.Duration, bool) {
	first := -1
	for i := range atts {
		if atts[i].Outcome == history.Fail {
			continue // never sent: started nothing
		}
		if first < 0 || atts[i].Start < atts[first].Start {
			first = i
		}
	}
	if first < 0 {
		return 0, false
	}
	return atts[first].End, true
}

// answered reports whether the client received a 2xx for the group.
func answered(atts []history.Attempt) bool {
	for i := range atts {
		if atts[i].Acked() {
			return true
		}
		for _, x := range atts[i].Answers {
			if !x.Hidden && x.Outcome == history.OK && x.Status >= 200 && x.Status < 300 {
				return true
			}
		}
	}
	return false
}

// last is the group's last attempt the client saw end (replays left
// out).
func last(atts []history.Attempt) *history.Attempt {
	var l *history.Attempt
	for i := range atts {
		a := &atts[i]
		if a.Fault == history.FaultReplay {
			continue
		}
		if l == nil || a.End > l.End {
			l = a
		}
	}
	return l
}

// checkSettles fails for an operation the API never let settle: a key
// stuck on in-flight answers (409) after its first attempt had long
// ended, and, with an effects reading, an operation charged although
// its final answer told the client it failed (a 4xx other than 409/429,
// or a 5xx), unless an earlier attempt's answer was lost (it may have
// charged, and the failure be an honest answer about a retry) or another
// user's operation shares the key. An operation that
// ends on a 5xx with no effect passes: that is failing closed.
type settlesCheck struct {
	obs            *history.Reading // nil: no effects reading
	v              Verdict          // counts and examples so far
	stuck, charged int
}

func (c *settlesCheck) add(h *history.History) {
	v, obs := &c.v, c.obs
	var examples []Example
	grace := settleGrace(h)
	flight := inFlight(h)
	var effects map[string]int
	if obs != nil {
		effects = obs.Effects
	}
	gs := groups(h)
	users := map[string]int{} // logical operations per key
	for _, g := range gs {
		users[g.op.Key]++
	}
	for _, g := range gs {
		if len(g.atts) == 0 {
			continue
		}
		v.Checked++
		if answered(g.atts) {
			continue
		}
		l := last(g.atts)
		if l == nil || l.Outcome != history.OK {
			continue // the client does not know: indeterminate, allowed
		}
		end, ok := firstEnd(g.atts)
		var problem, want string
		switch {
		case history.Matches(flight, l.Status) && ok && l.Start-end > grace:
			c.stuck++
			problem = fmt.Sprintf("the key is stuck: its last attempt (%d) was answered %d %s after the key's first attempt had ended, and the retries ran out",
				l.N, l.Status, (l.Start - end).Round(time.Millisecond))
			want = fmt.Sprintf("a replay of the first answer once the first attempt ended (within %s)", grace)
		case obs != nil && effects[g.op.Key] > 0 && told(l.Status) && users[g.op.Key] == 1 && !uncertain(g.atts, l):
			c.charged++
			problem = fmt.Sprintf("charged (%s) but the client was told it failed: the final answer was %d",
				plural(effects[g.op.Key], "effect", "effects"), l.Status)
			want = "no effect after a failure answer, or a success answer"
		default:
			continue
		}
		v.Violations++
		if len(examples) < MaxExamples {
			e := 0
			if obs != nil {
				e = effects[g.op.Key]
			}
			examples = append(examples, Example{Op: g.op.ID, Key: g.op.Key, User: g.op.User, Effects: e,
				Want: want, Problem: problem, Attempts: exampleAttempts(h, g.atts)})
		}
	}
	v.Examples = mergeExamples(v.Examples, examples)
}

func (c *settlesCheck) verdict(v Verdict) Verdict {
	v.Checked, v.Violations, v.Examples = c.v.Checked, c.v.Violations, c.v.Examples
	obs, stuck, charged := c.obs, c.stuck, c.charged
	switch {
	case v.Checked == 0:
		return unknown(v, "no op was sent; there is nothing to judge")
	case v.Violations == 0:
		v.Status = Pass
		what := "no key stuck in flight"
		if obs != nil {
			what += ", no effect behind a failure answer"
		}
		v.Summary = fmt.Sprintf("%s settled: %s", plural(v.Checked, "operation", "operations"), what)
	default:
		v.Status = Fail
		v.Summary = fmt.Sprintf("%d of %s did not settle: %d stuck in flight, %d charged but told they failed",
			v.Violations, plural(v.Checked, "operation", "operations"), stuck, charged)
	}
	return v
}

// told reports whether status tells the client the operation failed for
// good: a 4xx other than 409 (in flight) and 429 (slow down), or a 5xx.
func told(status int) bool {
	return (status >= 400 && status < 500 && status != 409 && status != 429) || status >= 500
}

// uncertain reports whether an attempt of the operation before last may
// have been processed without the client knowing (a lost answer, a
// timeout): the effect may be that attempt's, and the final failure answer
// an honest one about a retry (a store that went down, a token that
// expired). A 5xx is not uncertain here: it told the client it failed.
func uncertain(atts []history.Attempt, last *history.Attempt) bool {
	for i := range atts {
		a := &atts[i]
		if a == last || a.Fault == history.FaultReplay {
			continue
		}
		if a.Outcome == history.Info {
			return true
		}
		for _, x := range a.Answers {
			if x.Outcome == history.Info || x.Hidden {
				return true
			}
		}
	}
	return false
}
