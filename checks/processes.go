package checks

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// processesCheck is the processes invariant: lost operations. Every
// logical operation (the ops sharing a key and a user) whose key is fresh
// and whose request is valid must be processed: a 2xx within its retries
// and, with an effects reading, an effect. Its first op is the fresh one:
// a later op of the same key and user may rightly be replayed or refused.
//
// A refusal is a 4xx to one of the first op's identical sends (its
// attempts, their copies, an answer a fault hid) that is not one of the
// scenario's expected rejections (history.Judge.ExpectReject): a key
// burnt by a rejected first attempt (the corrected retry answered 412), a
// key refused because another key was seen (keys merged on a prefix).
// 409 and 429 are never refusals, nor is the profile's in-flight answer
// while an earlier send may still run. Replays after a 2xx and sends of
// another payload are left to same_response and payload_mismatch.
//
// An operation that ended with no definite answer (no answer, in flight,
// a 5xx, 429) is not judged: counted apart, never held. The verdict is
// Unknown when no operation could be judged.
type processesCheck struct {
	obs      *history.Reading // nil: no effects reading
	examples []Example
	// operations judged: processed (acknowledged, refused nothing),
	// rejected as expected, refused; missing are processed ones whose key
	// lacks an effect.
	processed, expected, refused, missing int
	refusals                              map[int]int // refused statuses
	unjudged                              unjudged
	blame                                 blame // the lost operations' faults
}

func (c *processesCheck) blamed() *blame { return &c.blame }

// unit is one logical operation of a part: the ops sharing a key and a
// user, the first of them the fresh one.
type unit struct {
	ops   []int // indexes in the part's Ops, first the fresh op
	acked bool  // some op of it got a 2xx the client saw
}

func (c *processesCheck) add(h *history.History) {
	if c.refusals == nil {
		c.refusals = map[int]int{}
	}
	expect := h.Meta.Judge.ExpectReject
	flight := inFlight(h)
	allow := max(settleGrace(h), h.Meta.Judge.Lease)
	idx := map[[2]string]int{}
	var units []unit
	for i, op := range h.Ops {
		k := [2]string{op.Key, op.User}
		u, ok := idx[k]
		if !ok {
			u = len(units)
			idx[k] = u
			units = append(units, unit{})
		}
		units[u].ops = append(units[u].ops, i)
		if answered(sends(h.AttemptsOf(i))) {
			units[u].acked = true
		}
	}
	var examples []Example
	acked := map[string]int{} // acknowledged operations per key
	clean := map[string]int{} // of which refused nothing
	for _, u := range units {
		fresh := sends(h.AttemptsOf(u.ops[0]))
		all := u.attempts(h)
		if len(all) == 0 {
			continue // never sent: nothing was asked
		}
		op := h.Ops[u.ops[0]]
		if u.acked {
			acked[op.Key]++
		}
		if r, ok := refusal(fresh, expect, flight, allow); ok {
			c.refused++
			c.refusals[r.status]++
			c.blame.add(&h.Meta, all)
			examples = append(examples, Example{Op: op.ID, Key: op.Key, User: op.User,
				Want: processWant(expect), Problem: refusalProblem(r, fresh, expect, u.acked),
				Attempts: exampleAttempts(h, all)})
			continue
		}
		switch {
		case u.acked:
			c.processed++
			clean[op.Key]++
		case finalExpected(fresh, expect):
			c.expected++
		default:
			c.unjudged.add(endOf(fresh, flight))
		}
	}
	if c.obs != nil {
		seen := map[string]bool{}
		for _, u := range units {
			op := h.Ops[u.ops[0]]
			if seen[op.Key] || clean[op.Key] == 0 {
				continue
			}
			seen[op.Key] = true
			e := c.obs.Effects[op.Key]
			short := min(acked[op.Key]-e, clean[op.Key])
			if short <= 0 {
				continue
			}
			c.missing += short
			c.blame.add(&h.Meta, u.attempts(h))
			examples = append(examples, Example{Op: op.ID, Key: op.Key, User: op.User, Effects: e,
				Want:     fmt.Sprintf("at least %s (one per acknowledged operation)", effectNoun.count(acked[op.Key])),
				Problem:  missingProblem(h, u, acked[op.Key], e),
				Attempts: exampleAttempts(h, u.attempts(h))})
		}
	}
	slices.SortStableFunc(examples, func(x, y Example) int { return cmp.Compare(x.Op, y.Op) })
	c.examples = mergeExamples(c.examples, examples[:min(len(examples), MaxExamples)])
}

func (c *processesCheck) verdict(v Verdict) Verdict {
	judged := c.processed + c.expected + c.refused
	v.Checked, v.Violations, v.Missing = judged, c.refused+c.missing, c.missing
	v.NotJudged, v.RejectedAsExpected, v.Refused = c.unjudged.total(), c.expected, c.refused
	v.Examples = slices.Clone(c.examples)
	if v.Examples == nil {
		v.Examples = []Example{}
	}
	total := judged + v.NotJudged
	switch {
	case total == 0:
		return unknown(v, "no op was sent; there is nothing to judge")
	case judged == 0:
		return unknown(v, fmt.Sprintf("no operation could be judged: %s", c.unjudged.text()))
	}
	processed := fmt.Sprintf("%d processed", c.processed-c.missing)
	if c.obs != nil && c.processed > c.missing {
		processed += " (each with an effect)"
	}
	rest := ""
	if v.NotJudged > 0 {
		rest = fmt.Sprintf("; %d not judged (%s)", v.NotJudged, c.unjudged.text())
	}
	if v.Violations == 0 {
		v.Status = Pass
		v.Summary = fmt.Sprintf("%d of %s judged: %s, %d rejected as expected, 0 refused a valid request%s",
			judged, plural(total, "operation", "operations"), processed, c.expected, rest)
		return v
	}
	v.Status = Fail
	var lost []string
	if c.refused > 0 {
		lost = append(lost, fmt.Sprintf("%d refused a valid request (%s)", c.refused, statusText(c.refusals)))
	}
	if c.missing > 0 {
		lost = append(lost, fmt.Sprintf("%d acknowledged with no effect", c.missing))
	}
	v.Summary = fmt.Sprintf("%d of %d operations judged were lost: %s; %s, %d rejected as expected%s",
		v.Violations, judged, strings.Join(lost, ", "), processed, c.expected, rest)
	return v
}

// attempts are the attempts of every op of u, for evidence.
func (u unit) attempts(h *history.History) []history.Attempt {
	if len(u.ops) == 1 {
		return h.AttemptsOf(u.ops[0])
	}
	var out []history.Attempt
	for _, i := range u.ops {
		out = append(out, h.AttemptsOf(i)...)
	}
	return out
}

// sends are an op's identical sends: its attempts but replays (sent after
// a 2xx on purpose) and sends of another payload.
func sends(atts []history.Attempt) []history.Attempt {
	for i := range atts {
		if history.IsReplay(atts[i].Fault) {
			out := slices.Clone(atts[:i])
			for _, a := range atts[i+1:] {
				if !history.IsReplay(a.Fault) {
					out = append(out, a)
				}
			}
			return out
		}
	}
	return atts
}

// expected reports whether status to attempt n is an expected rejection.
func expected(expect []history.Rejection, n, status int) bool {
	for _, r := range expect {
		if r.Attempt == n && r.Status == status {
			return true
		}
	}
	return false
}

// refused is a refusal of a valid request: the answer to attempt n (copy
// copy, or hidden from the client).
type refused struct {
	n, copy, status int
	hidden          bool
}

// refusal returns the first answer to the fresh op's sends that refused a
// valid request, if any.
func refusal(atts []history.Attempt, expect []history.Rejection, flight []string, allow time.Duration) (refused, bool) {
	for i := range atts {
		a := &atts[i]
		check := func(status int) bool {
			switch {
			case status < 400 || status >= 500, status == 409, status == 429, expected(expect, a.N, status):
				return false
			case history.Matches(flight, status) && mayRun(atts[:i], a, allow):
				return false // the profile's in-flight answer, while a send may run
			}
			return true
		}
		if a.Outcome == history.OK && check(a.Status) {
			return refused{n: a.N, status: a.Status}, true
		}
		for _, x := range a.Answers {
			if x.Outcome == history.OK && check(x.Status) {
				return refused{n: a.N, copy: x.Copy, status: x.Status, hidden: x.Hidden}, true
			}
		}
	}
	return refused{}, false
}

// mayRun reports whether another send of the op may still be running
// when a was sent: a copy of a itself, or an earlier attempt the client
// gave up on (no answer) that ended less than allow before a started.
func mayRun(before []history.Attempt, a *history.Attempt, allow time.Duration) bool {
	if a.Copies > 1 {
		return true
	}
	for i := range before {
		if before[i].Outcome == history.Info && a.Start <= before[i].End+allow {
			return true
		}
	}
	return false
}

// finalExpected reports whether the fresh op's last send was answered
// with an expected rejection.
func finalExpected(atts []history.Attempt, expect []history.Rejection) bool {
	if len(atts) == 0 {
		return false
	}
	l := &atts[len(atts)-1]
	return l.Outcome == history.OK && expected(expect, l.N, l.Status)
}

// endOf says why an op with no 2xx and no refusal could not be judged,
// from its last send.
func endOf(atts []history.Attempt, flight []string) reason {
	if len(atts) == 0 {
		return endNoAnswer
	}
	l := &atts[len(atts)-1]
	switch {
	case l.Outcome != history.OK:
		return endNoAnswer
	case l.Status == 409 || history.Matches(flight, l.Status):
		return endInFlight
	case l.Status == 429:
		return endLimited
	case l.Status >= 500:
		return endFailing
	}
	return endOther
}

func processWant(expect []history.Rejection) string {
	if len(expect) == 0 {
		return "a 2xx (processed)"
	}
	parts := make([]string, len(expect))
	for i, r := range expect {
		parts[i] = fmt.Sprintf("%d to attempt %d", r.Status, r.Attempt)
	}
	return "the expected " + strings.Join(parts, ", ") + ", then a 2xx (processed)"
}

func refusalProblem(r refused, atts []history.Attempt, expect []history.Rejection, acked bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused a valid request: attempt %d", r.n)
	if r.copy > 0 {
		fmt.Fprintf(&b, " (copy %d)", r.copy)
	}
	if r.hidden {
		b.WriteString(" (answer hidden from the client)")
	}
	fmt.Fprintf(&b, " answered %d", r.status)
	for i := range atts {
		a := &atts[i]
		if a.N >= r.n {
			break
		}
		if a.Outcome == history.OK && expected(expect, a.N, a.Status) {
			fmt.Fprintf(&b, " after attempt %d's expected %d: the corrected retry was refused (did the rejection burn the key?)", a.N, a.Status)
			break
		}
	}
	if acked {
		b.WriteString("; a later attempt was processed")
	} else {
		b.WriteString("; the operation was never processed")
	}
	return b.String()
}

func missingProblem(h *history.History, u unit, acked, e int) string {
	if acked > 1 {
		return fmt.Sprintf("%d operations acknowledged under the key (by different users) but %s: an operation served another's answer",
			acked, noneOf(e, effectNoun))
	}
	status := 0
	for _, a := range u.attempts(h) {
		if a.Acked() && !history.IsReplay(a.Fault) {
			status = a.Status
			break
		}
	}
	return fmt.Sprintf("acknowledged with %d but the key has no effect: processed in words only", status)
}

// reason is why a check could not judge an operation.
type reason int

const (
	endNoAnswer reason = iota
	endInFlight
	endGrace
	endLease
	endFailing
	endLimited
	endShared
	endOther
	nReasons
)

var reasonText = [nReasons]string{
	endNoAnswer: "ended without an answer",
	endInFlight: "ended in flight (409)",
	endGrace:    "ended in flight within settle_grace",
	endLease:    "ended in flight within the declared lease",
	endFailing:  "ended on a 5xx",
	endLimited:  "ended on 429",
	endShared:   "ended on a failure answer under a key another user shares",
	endOther:    "ended on another answer",
}

// unjudged counts the operations a check could not judge, by reason.
type unjudged [nReasons]int

func (u *unjudged) add(r reason) { u[r]++ }

func (u *unjudged) total() int {
	n := 0
	for _, c := range u {
		n += c
	}
	return n
}

// text lists the reasons with their counts: "3 ended without an answer,
// 1 ended on a 5xx".
func (u *unjudged) text() string {
	var parts []string
	for r, c := range u {
		if c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, reasonText[r]))
		}
	}
	return strings.Join(parts, ", ")
}
