package checks

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
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

// settlesCheck fails for an operation the API never let settle:
//   - a key still answered in flight (409, or the profile's) when its
//     retries ran out, longer than settle_grace after its first attempt
//     ended, unless the server declares a lease that covers it;
//   - (with an effects reading) an operation charged although its final
//     answer told the client it failed (a 4xx other than 409/429, or a
//     5xx), whatever its earlier attempts, unless another user's
//     operation shares the key (the effect may be theirs);
//   - a key answered the same 5xx by every attempt while other keys were
//     served 2xx meanwhile: an error tied to the key, not a transient one.
//
// An operation that ends on a 5xx with no effect passes: that is failing
// closed. An operation it cannot judge (no answer, in flight within the
// grace or the declared lease, 429) is counted apart, never as settled;
// the verdict is Unknown when none could be judged.
type settlesCheck struct {
	obs *history.Reading // nil: no effects reading
	v   Verdict          // Checked, Violations and Examples so far
	// stuck, charged: violations so far; told: ops settled on a failure
	// answer with no effect behind it (judged on the reading).
	stuck, charged, told int
	unjudged             unjudged
	longest              time.Duration // the longest in-flight answer a declared lease covered
	acks                 map[int64]int // 2xx answers by ackSlot of their end
	erring               []erring      // same 5xx to every attempt: judged once every part is in
	blame                blame         // the violating ops' faults, erring ones aside
	final                blame         // blame and the erring ops that are violations, once judged
}

func (c *settlesCheck) blamed() *blame { return &c.final }

// erring is an operation answered the same 5xx by every attempt; it is a
// violation when other keys got a 2xx while it was retried.
type erring struct {
	ex       Example
	from, to time.Duration // its first send, its last answer
	told     bool          // judged for an effect on the reading
	blame    blame         // its faults, blamed if it is a violation
}

// ackSlot is the resolution at which 2xx answers are counted in time.
const ackSlot = 10 * time.Millisecond

func (c *settlesCheck) add(h *history.History) {
	v, obs := &c.v, c.obs
	if c.acks == nil {
		c.acks = map[int64]int{}
	}
	var examples []Example
	grace, lease := settleGrace(h), h.Meta.Judge.Lease
	flight := inFlight(h)
	var effects map[string]int
	if obs != nil {
		effects = obs.Effects
	}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if a.Fault == history.FaultMismatch {
			continue
		}
		if a.Acked() {
			c.acks[int64(a.End/ackSlot)]++
		}
		for _, x := range a.Answers {
			if !x.Hidden && x.Outcome == history.OK && x.Status >= 200 && x.Status < 300 {
				c.acks[int64(x.End/ackSlot)]++
			}
		}
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
		if answered(g.atts) {
			v.Checked++
			continue
		}
		l := last(g.atts)
		if l == nil || l.Outcome != history.OK {
			c.unjudged.add(endNoAnswer) // the client does not know
			continue
		}
		end, ok := firstEnd(g.atts)
		held := l.Start - end // how long after the first attempt ended the key still answered
		flying := ok && (l.Status == 409 || history.Matches(flight, l.Status))
		single := users[g.op.Key] == 1
		e := effects[g.op.Key]
		var problem, want string
		switch {
		case flying && held > grace && (lease <= 0 || held > lease):
			c.stuck++
			problem, want = stuckProblem(l, held, grace, lease)
		case obs != nil && told(l.Status) && single && e > 0:
			c.charged++
			problem = fmt.Sprintf("charged (%s) but the client was told it failed: the final answer was %d",
				plural(e, "effect", "effects"), l.Status)
			want = "no effect after a failure answer, or a success answer"
		default:
			if st, n, ok := sameFailure(g.atts); ok {
				var b blame
				b.add(&h.Meta, g.atts)
				c.erring = append(c.erring, erring{blame: b, from: g.atts[0].Start, to: l.End, told: obs != nil && single,
					ex: Example{Op: g.op.ID, Key: g.op.Key, User: g.op.User, Effects: e,
						Want:     "a 2xx once the failure clears, as other keys got",
						Problem:  fmt.Sprintf("the same %d to every one of its %d attempts", st, n),
						Attempts: exampleAttempts(h, g.atts)}})
				continue
			}
			switch {
			case flying && held > grace:
				c.unjudged.add(endLease)
				c.longest = max(c.longest, held)
			case flying:
				c.unjudged.add(endGrace)
			case told(l.Status) && obs != nil && !single:
				c.unjudged.add(endShared)
			case told(l.Status):
				v.Checked++ // settled on a failure answer
				if obs != nil {
					c.told++
				}
			case l.Status == 429:
				c.unjudged.add(endLimited)
			default:
				c.unjudged.add(endOther)
			}
			continue
		}
		v.Checked++
		v.Violations++
		c.blame.add(&h.Meta, g.atts)
		if len(examples) < MaxExamples {
			examples = append(examples, Example{Op: g.op.ID, Key: g.op.Key, User: g.op.User, Effects: e,
				Want: want, Problem: problem, Attempts: exampleAttempts(h, g.atts)})
		}
	}
	v.Examples = mergeExamples(v.Examples, examples)
}

func stuckProblem(l *history.Attempt, held, grace, lease time.Duration) (problem, want string) {
	problem = fmt.Sprintf("the key is stuck: its last attempt (%d) was answered %d %s after the key's first attempt had ended, and the retries ran out",
		l.N, l.Status, seconds(held))
	if lease > 0 {
		problem += fmt.Sprintf("; that is longer than the server's declared lease (%s)", seconds(lease))
		want = fmt.Sprintf("a replay of the first answer once the lease (%s) ran out", seconds(lease))
		return problem, want
	}
	problem += fmt.Sprintf(" (settle_grace %s); if the server holds a key in flight that long on purpose, declare its lease (lease: %s)",
		seconds(grace), held.Round(time.Second)+time.Second)
	return problem, fmt.Sprintf("a replay of the first answer once the first attempt ended (within %s)", grace)
}

// sameFailure reports whether every answered attempt of an operation got
// the same 5xx, at least twice and with no attempt left without an
// answer: status, and how many attempts were answered it.
func sameFailure(atts []history.Attempt) (status, n int, ok bool) {
	for i := range atts {
		a := &atts[i]
		switch {
		case a.Fault == history.FaultReplay || a.Outcome == history.Fail:
			continue
		case a.Outcome != history.OK || a.Status < 500 || (status != 0 && a.Status != status):
			return 0, 0, false
		}
		status = a.Status
		n++
		for _, x := range a.Answers {
			if x.Outcome != history.OK || x.Status != status {
				return 0, 0, false
			}
		}
	}
	return status, n, n >= 2
}

// acksWithin counts the 2xx answers that ended strictly within (from, to),
// at ackSlot's resolution.
func (c *settlesCheck) acksWithin(from, to time.Duration) int {
	n := 0
	for s := int64(from/ackSlot) + 1; s < int64(to/ackSlot); s++ {
		n += c.acks[s]
	}
	return n
}

func (c *settlesCheck) verdict(v Verdict) Verdict {
	checked, violations, told := c.v.Checked, c.v.Violations, c.told
	var erring []Example
	c.final = blame{}
	c.final.merge(c.blame)
	for _, e := range c.erring {
		checked++
		n := c.acksWithin(e.from, e.to)
		if n == 0 {
			if e.told {
				told++ // failing closed through an outage
			}
			continue
		}
		violations++
		c.final.merge(e.blame)
		ex := e.ex
		ex.Problem += fmt.Sprintf(" over %s, while %s to other keys meanwhile: an error tied to this key, not a transient failure",
			(e.to - e.from).Round(time.Millisecond), plural(n, "2xx was answered", "2xx were answered"))
		erring = append(erring, ex)
	}
	slices.SortStableFunc(erring, func(x, y Example) int { return cmp.Compare(x.Op, y.Op) })
	v.Checked, v.Violations = checked, violations
	v.Examples = mergeExamples(slices.Clone(c.v.Examples), erring[:min(len(erring), MaxExamples)])
	v.NotJudged = c.unjudged.total()
	total := checked + v.NotJudged
	note := ""
	if c.longest > 0 {
		note = "; " + leaseNote(c.longest)
	}
	rest := note
	if v.NotJudged > 0 {
		rest = fmt.Sprintf("; %d not judged (%s)%s", v.NotJudged, c.unjudged.text(), note)
	}
	switch {
	case total == 0:
		return unknown(v, "no op was sent; there is nothing to judge")
	case checked == 0:
		return unknown(v, "no operation could be judged: "+c.unjudged.text()+note)
	case violations == 0:
		v.Status = Pass
		what := "none stuck in flight, no 5xx tied to a key"
		switch {
		case c.obs == nil:
		case told > 0:
			what += fmt.Sprintf(", %s on a failure answer with no effect behind it", plural(told, "operation ended", "operations ended"))
		default:
			what += ", no operation ended on a failure answer (no effect to judge behind one)"
		}
		v.Summary = fmt.Sprintf("%d of %s judged settled: %s%s", checked, plural(total, "operation", "operations"), what, rest)
	default:
		v.Status = Fail
		v.Summary = fmt.Sprintf("%d of %d operations judged did not settle: %d stuck in flight, %d charged but told they failed, %d with a 5xx that never cleared%s",
			violations, checked, c.stuck, c.charged, violations-c.stuck-c.charged, rest)
	}
	return v
}

// leaseNote names a lease longer than settle_grace: the longest time a
// key answered in flight within the declared lease.
func leaseNote(d time.Duration) string {
	s := seconds(d)
	return fmt.Sprintf("409 for %s: the server's in-progress lease is at least %s; set settle_grace above it if that is intended", s, s)
}

// seconds writes d for a person: "31 s", "1.5 s", "700 ms".
func seconds(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
	}
	return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " s"
}

// told reports whether status tells the client the operation failed for
// good: a 4xx other than 409 (in flight) and 429 (slow down), or a 5xx.
func told(status int) bool {
	return (status >= 400 && status < 500 && status != 409 && status != 429) || status >= 500
}
