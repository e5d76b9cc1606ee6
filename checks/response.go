package checks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// reply is one answer to an identical send of an op: an attempt's own,
// or another copy's, or one a fault hid from the client.
type reply struct {
	n      int  // the attempt's number
	replay bool // sent on purpose after the op's first 2xx (operation.replay)
	// original is true for the op's own request sent again after another
	// payload under its key (replay.then_original).
	original    bool
	copy        int
	hidden      bool
	status      int
	fingerprint history.Fingerprint
	fields      map[string]string
	start, end  time.Duration
}

func (r reply) acked() bool { return r.status >= 200 && r.status < 300 }

func (r reply) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d", r.n)
	if r.original {
		b.WriteString(" (the original, sent again after another payload under its key)")
	}
	if r.copy > 0 {
		fmt.Fprintf(&b, " (copy %d)", r.copy)
	}
	if r.hidden {
		b.WriteString(" (answer hidden from the client)")
	}
	return b.String()
}

// replies lists every answer received for the op's identical sends: not
// sends of another payload, nor attempts the scenario makes differ on
// purpose (expect_reject names them).
func replies(atts []history.Attempt, expect []history.Rejection) []reply {
	var out []reply
	mismatched := false
	for i := range atts {
		a := &atts[i]
		if a.Fault == history.FaultMismatch {
			mismatched = true
			continue
		}
		if rejectsAttempt(expect, a.N) {
			continue
		}
		if a.Outcome == history.OK {
			out = append(out, reply{n: a.N, replay: a.Fault == history.FaultReplay, original: mismatched && a.Fault == history.FaultReplay,
				status: a.Status, fingerprint: a.Fingerprint, fields: a.Fields, start: a.Start, end: a.End})
		}
		for _, x := range a.Answers {
			if x.Outcome == history.OK {
				out = append(out, reply{n: a.N, copy: x.Copy, hidden: x.Hidden, status: x.Status, fingerprint: x.Fingerprint,
					fields: x.Fields, start: a.Start, end: x.End})
			}
		}
	}
	return out
}

// checkSameResponse judges every answer to an identical send of an op
// (retries, replays, the copies of a duplicate send, answers a fault hid
// from the client) against its first success: a 2xx must have the same
// status and normalised body (fingerprint); an in-flight answer (409, or
// the profile's) is allowed only while the first attempt may still be
// running (up to the settle grace after the first success ended);
// transient answers (5xx, 429) are not compared; any other 4xx is a
// violation. Sends of another payload are left to payload_mismatch, but
// the original sent again after one (replay.then_original) is judged: a
// rejection that replaced the stored answer is caught there. Attempts the
// scenario expects rejected (expect_reject) carry another request and are
// left out. An op with no 2xx is not judged.
type responseCheck struct {
	v                   Verdict // counts and examples so far
	replayed, differing int
	blame               blame // the violating ops' faults
}

func (c *responseCheck) blamed() *blame { return &c.blame }

func (c *responseCheck) add(h *history.History) {
	v := &c.v
	var examples []Example
	grace := settleGrace(h)
	flight := inFlight(h)
	expect := h.Meta.Judge.ExpectReject
	for i := range h.Ops {
		atts := h.AttemptsOf(i)
		rs := replies(atts, expect)
		first := -1
		for j := range rs {
			if rs[j].acked() && (first < 0 || rs[j].end < rs[first].end) {
				first = j
			}
		}
		if first < 0 {
			if len(atts) > 0 {
				v.NotJudged++
			}
			continue
		}
		f := rs[first]
		v.Checked++
		bad, compared := 0, 0
		for j, r := range rs {
			if j == first {
				continue
			}
			var problem string
			switch {
			case r.acked():
				compared++
				if r.status != f.status || r.fingerprint != f.fingerprint {
					problem = fmt.Sprintf("%s answered %d with body %016x but %s answered %d with body %016x",
						f, f.status, f.fingerprint, r, r.status, r.fingerprint)
					if d := fieldDiff(f.fields, r.fields); d != "" {
						problem += "; " + d
					}
				}
			case r.status >= 500 || r.status == 429:
				// transient: the client retries; not compared
			case history.Matches(flight, r.status):
				// A replay is sent after the first success ended: nothing
				// of the op can be in flight then.
				if r.replay || r.start > f.end+grace {
					problem = fmt.Sprintf("identical retry after %d answered %d: %s, sent %s after the first success, still says in flight",
						f.status, r.status, r, (r.start - f.end).Round(time.Millisecond))
				}
			case r.original:
				problem = fmt.Sprintf("%s answered %d, the first answer was %d: the rejection of the other payload replaced the stored answer",
					r, r.status, f.status)
			default:
				problem = fmt.Sprintf("identical retry after %d answered %d: %s", f.status, r.status, r)
			}
			if problem == "" {
				continue
			}
			if bad == 0 && len(examples) < MaxExamples {
				examples = append(examples, Example{Op: h.Ops[i].ID, Key: h.Ops[i].Key, User: h.Ops[i].User,
					Want: fmt.Sprintf("status %d, body %016x", f.status, f.fingerprint), Problem: problem,
					Attempts: exampleAttempts(h, atts)})
			}
			bad++
		}
		if compared > 0 {
			c.replayed++
		}
		if bad > 0 {
			v.Violations++
			c.blame.add(&h.Meta, atts)
			c.differing += bad
		}
	}
	v.Examples = mergeExamples(v.Examples, examples)
}

func (c *responseCheck) verdict(v Verdict) Verdict {
	v.Checked, v.Violations, v.Examples = c.v.Checked, c.v.Violations, c.v.Examples
	v.NotJudged = c.v.NotJudged
	replayed, differing := c.replayed, c.differing
	rest := ""
	if v.NotJudged > 0 {
		rest = fmt.Sprintf("; %d not judged (no 2xx to compare with)", v.NotJudged)
	}
	switch {
	case v.Checked == 0:
		return unknown(v, "no op received a 2xx answer; there is nothing to compare")
	case v.Violations == 0:
		v.Status = Pass
		v.Summary = fmt.Sprintf("%s acknowledged, %d with more than one 2xx answer, all identical%s",
			plural(v.Checked, "op", "ops"), replayed, rest)
	default:
		v.Status = Fail
		v.Summary = fmt.Sprintf("%d of %s acknowledged got answers that differ from the first success (%s)%s",
			v.Violations, plural(v.Checked, "op", "ops"), plural(differing, "answer", "answers"), rest)
	}
	return v
}

// fieldDiff lists the captured response fields whose values differ, as
// `id "ch_1" then "ch_2"`.
func fieldDiff(a, b map[string]string) string {
	names := make([]string, 0, len(a)+len(b))
	for k := range a {
		names = append(names, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var parts []string
	for _, k := range names {
		av, aok := a[k]
		bv, bok := b[k]
		if av == bv && aok == bok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s then %s", k, quoteOr(av, aok), quoteOr(bv, bok)))
	}
	return strings.Join(parts, ", ")
}

func quoteOr(s string, ok bool) string {
	if !ok {
		return "(absent)"
	}
	return fmt.Sprintf("%q", s)
}

// rejectsAttempt reports whether the scenario expects attempt n rejected:
// its request differs from the op's on purpose.
func rejectsAttempt(expect []history.Rejection, n int) bool {
	for _, r := range expect {
		if r.Attempt == n {
			return true
		}
	}
	return false
}
