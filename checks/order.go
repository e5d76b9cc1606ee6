package checks

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// orderCheck judges ordered_apply: the ops are events, grouped by the
// object they update (Op.Object) and ordered by their id (the order the
// provider made them in); after the run each object must hold the state of
// an event at least as new as its newest acknowledged one, and one of its
// own. An object holding an older event's state had a newer one
// overwritten by a late delivery.
//
// An object puts the order to the test when one of its events was first
// delivered after a newer one was acknowledged; a run in which none did
// is unknown, never a pass.
type orderCheck struct {
	states  map[string]int
	objects map[string][]orderEvent
	kept    int // attempts kept for examples
	blame   blame
	meta    *history.Meta
}

// orderEvent is one op of ordered_apply. first is when its first
// delivery known to have reached the target left (answered, or its answer
// hidden by a drop_ack).
type orderEvent struct {
	id    int
	key   string
	acked bool
	// first is when the event's first delivery started; ack when its
	// first 2xx ended (acked only).
	first, ack time.Duration
	sent       bool
	atts       []history.Attempt // for examples, while maxOrderKept allows
}

// maxOrderKept bounds the attempts ordered_apply keeps for its examples.
const maxOrderKept = 100_000

func (c *orderCheck) blamed() *blame { return &c.blame }

func (c *orderCheck) add(h *history.History) {
	if c.objects == nil {
		c.objects = map[string][]orderEvent{}
	}
	c.meta = &h.Meta
	for i := range h.Ops {
		op := h.Ops[i]
		atts := h.AttemptsOf(i)
		ev := orderEvent{id: op.ID, key: op.Key}
		for _, a := range atts {
			if a.Outcome != history.OK && !heardBy(a) || history.IsReplay(a.Fault) {
				continue // not known to have reached the target; or a replay, sent after the op was acknowledged
			}
			if at := a.SentAt(); !ev.sent || at < ev.first {
				ev.sent, ev.first = true, at
			}
			if a.Acked() && (!ev.acked || a.End < ev.ack) {
				ev.acked, ev.ack = true, a.End
			}
		}
		if c.kept < maxOrderKept {
			ev.atts = exampleAttempts(h, atts)
			c.kept += len(ev.atts)
		}
		c.objects[op.Object] = append(c.objects[op.Object], ev)
	}
}

// heardBy reports whether a drop_ack hid an answer of a: the target
// saw the request.
func heardBy(a history.Attempt) bool {
	return slices.ContainsFunc(a.Answers, func(x history.Answer) bool { return x.Hidden })
}

func (c *orderCheck) verdict(v Verdict) Verdict {
	if c.meta != nil && c.meta.Renumbered {
		return unknown(v, "the shards' histories were merged with their ops renumbered (a shard missing, or unequal shares of the ops): the order the target reports cannot be matched to them")
	}
	names := make([]string, 0, len(c.objects))
	for o := range c.objects {
		names = append(names, o)
	}
	slices.Sort(names)
	tested := 0
	var examples []Example
	for _, name := range names {
		evs := c.objects[name]
		slices.SortFunc(evs, func(a, b orderEvent) int { return cmp.Compare(a.id, b.id) })
		if name == "" {
			v.NotJudged += len(evs) // no object: nothing to order by
			continue
		}
		newest := -1
		for i, e := range evs {
			if e.acked {
				newest = i
			}
		}
		if newest < 0 {
			v.NotJudged++ // no event acknowledged: any state (or none) may stand
			continue
		}
		v.Checked++
		if reordered(evs) {
			tested++
		}
		want := evs[newest]
		state, ok := c.states[name]
		own := slices.IndexFunc(evs, func(e orderEvent) bool { return e.id == state })
		problem := ""
		switch {
		case !ok:
			problem = fmt.Sprintf("object %s has no state, though its event %d was acknowledged", name, want.id)
		case own < 0:
			problem = fmt.Sprintf("object %s holds the state of event %d, not one of its events (newest acknowledged: %d)", name, state, want.id)
		case state < want.id:
			problem = fmt.Sprintf("object %s holds the state of event %d, older than its event %d, which was acknowledged: a late delivery of an older event overwrote a newer one", name, state, want.id)
		default:
			continue
		}
		v.Violations++
		atts := want.atts
		if own >= 0 {
			atts = append(slices.Clone(evs[own].atts), atts...)
		}
		if c.meta != nil {
			c.blame.add(c.meta, atts)
		}
		if len(examples) < MaxExamples {
			examples = append(examples, Example{Op: want.id, Key: want.key,
				Want: fmt.Sprintf("the state of event %d or newer", want.id), Problem: problem, Attempts: atts})
		}
	}
	v.Examples = mergeExamples(v.Examples, examples)
	switch {
	case v.Checked == 0:
		return unknown(v, "no object had an acknowledged event: nothing to hold a final state to")
	case v.Violations > 0:
		v.Status = Fail
		v.Summary = fmt.Sprintf("%d of %s hold an older event's state than their newest acknowledged one", v.Violations, plural(v.Checked, "object", "objects"))
	case tested == 0:
		return unknown(v, fmt.Sprintf("%s each hold their newest acknowledged event's state, but no event was first delivered after a newer one of its object was acknowledged: the order was never put to the test (a delay fault on first deliveries holds events back)",
			plural(v.Checked, "object", "objects")))
	default:
		v.Status = Pass
		v.Summary = fmt.Sprintf("%s each hold their newest acknowledged event's state; %d had an event first delivered after a newer one was acknowledged", plural(v.Checked, "object", "objects"), tested)
	}
	return v
}

// reordered reports whether an event of evs (sorted by id) was first
// delivered after a newer one had been acknowledged.
func reordered(evs []orderEvent) bool {
	for i, older := range evs {
		if !older.sent {
			continue
		}
		for _, newer := range evs[i+1:] {
			if newer.acked && newer.ack <= older.first {
				return true
			}
		}
	}
	return false
}
