package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

// checkSameResponse compares every 2xx answer of an op with its first 2xx
// answer: status and normalised body (fingerprint) must be equal. Replays
// (history.FaultReplay) are compared like retries; mismatch attempts are another
// request under the key and are left to payload_mismatch.
func checkSameResponse(v Verdict, h *history.History) Verdict {
	replayed, differing := 0, 0
	for i := range h.Ops {
		atts := h.AttemptsOf(i)
		first := -1
		bad, acked := 0, 0
		for j := range atts {
			a := &atts[j]
			if !a.Acked() || a.Fault == history.FaultMismatch {
				continue
			}
			acked++
			if first < 0 {
				first = j
				continue
			}
			if a.Status != atts[first].Status || a.Fingerprint != atts[first].Fingerprint {
				if bad == 0 && len(v.Examples) < MaxExamples {
					v.Examples = append(v.Examples, responseExample(h.Ops[i], atts, first, j))
				}
				bad++
			}
		}
		if first < 0 {
			continue
		}
		v.Checked++
		if acked > 1 {
			replayed++
		}
		if bad > 0 {
			v.Violations++
			differing += bad
		}
	}
	switch {
	case v.Checked == 0:
		return unknown(v, "no op received a 2xx answer; there is nothing to compare")
	case v.Violations == 0:
		v.Status = Pass
		v.Summary = fmt.Sprintf("%s acknowledged, %d with more than one 2xx answer, all identical",
			plural(v.Checked, "op", "ops"), replayed)
	default:
		v.Status = Fail
		v.Summary = fmt.Sprintf("%d of %s acknowledged got different 2xx answers (%s differ from the first)",
			v.Violations, plural(v.Checked, "op", "ops"), plural(differing, "answer", "answers"))
	}
	return v
}

func responseExample(op history.Op, atts []history.Attempt, first, j int) Example {
	a, b := &atts[first], &atts[j]
	want := fmt.Sprintf("status %d, body %016x", a.Status, a.Fingerprint)
	var p strings.Builder
	fmt.Fprintf(&p, "attempt %d answered %d with body %016x but attempt %d answered %d with body %016x",
		a.N, a.Status, a.Fingerprint, b.N, b.Status, b.Fingerprint)
	if d := fieldDiff(a.Fields, b.Fields); d != "" {
		p.WriteString("; ")
		p.WriteString(d)
	}
	return Example{
		Op: op.ID, Key: op.Key, User: op.User, Want: want, Problem: p.String(),
		Attempts: exampleAttempts(atts),
	}
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
