package checks

import (
	"slices"

	"github.com/idemcheck/idemcheck/history"
)

// keys groups the ops of a history by key. In the common case every op has
// its own key and next stays nil; ops sharing a key are chained from the
// first op that used it (the key's leader).
type keys struct {
	h      *history.History
	states []history.OpState
	n      int // distinct keys
	// next[i] is the next op with op i's key, -1 at the end of a chain;
	// follower[i] is true for every op that is not its key's leader. Both
	// are nil when every key is distinct.
	next     []int32
	follower []bool
}

// tally is what the client learnt about one key, counted in logical
// operations: ops sharing a key and a user are one operation.
type tally struct {
	units, acked, indet, notSent, rejected int
}

func groupKeys(h *history.History) *keys {
	n := len(h.Ops)
	g := &keys{h: h, states: make([]history.OpState, n)}
	head := make(map[string]int32, n)
	var tail []int32
	for i := range h.Ops {
		g.states[i] = history.State(h.AttemptsOf(i))
		k := h.Ops[i].Key
		j, ok := head[k]
		if !ok {
			head[k] = int32(i)
			continue
		}
		if g.next == nil {
			g.next = make([]int32, n)
			tail = make([]int32, n)
			for x := range g.next {
				g.next[x], tail[x] = -1, -1
			}
			g.follower = make([]bool, n)
		}
		t := tail[j]
		if t < 0 {
			t = j
		}
		g.next[t] = int32(i)
		tail[j] = int32(i)
		g.follower[i] = true
	}
	g.n = len(head)
	return g
}

// leader reports whether op i is the first op of its key.
func (g *keys) leader(i int) bool { return g.follower == nil || !g.follower[i] }

// shared reports whether leader i shares its key with other ops.
func (g *keys) shared(i int) bool { return g.next != nil && g.next[i] >= 0 }

// tally counts the logical operations of leader i's key by state.
func (g *keys) tally(i int) tally {
	if !g.shared(i) {
		return tallyOf(g.states[i], tally{units: 1})
	}
	users := map[string]history.OpState{}
	for j := int32(i); j >= 0; j = g.next[j] {
		u := g.h.Ops[j].User
		s, ok := users[u]
		if !ok {
			users[u] = g.states[j]
			continue
		}
		users[u] = combine(s, g.states[j])
	}
	t := tally{units: len(users)}
	for _, s := range users {
		t = tallyOf(s, t)
	}
	return t
}

func tallyOf(s history.OpState, t tally) tally {
	switch s {
	case history.Acked:
		t.acked++
	case history.NotSent:
		t.notSent++
	case history.Rejected:
		t.rejected++
	default:
		t.indet++
	}
	return t
}

// combine is the state of one logical operation sent as two ops.
func combine(a, b history.OpState) history.OpState {
	switch {
	case a == history.Acked || b == history.Acked:
		return history.Acked
	case a == history.Indeterminate || b == history.Indeterminate:
		return history.Indeterminate
	case a == history.Rejected || b == history.Rejected:
		return history.Rejected
	}
	return history.NotSent
}

// maxExampleAttempts bounds the attempts copied into one example.
const maxExampleAttempts = 50

// exampleAttempts copies at most maxExampleAttempts of an op's attempts
// in h into an example, their ops named by their ids in the run (in a
// part of a history, attempts name their op by its index in the part).
func exampleAttempts(h *history.History, atts []history.Attempt) []history.Attempt {
	out := slices.Clone(atts[:min(len(atts), maxExampleAttempts)])
	runIDs(h, out)
	return out
}

// runIDs renames the ops of attempts of h from their index in h.Ops to
// their id in the run.
func runIDs(h *history.History, atts []history.Attempt) {
	for i := range atts {
		if op := atts[i].Op; op >= 0 && op < len(h.Ops) {
			atts[i].Op = h.Ops[op].ID
		}
	}
}

// attempts returns a copy of the attempts of leader i's key, every op of the
// key included.
func (g *keys) attempts(i int) []history.Attempt {
	var out []history.Attempt
	j := int32(i)
	for j >= 0 && len(out) < maxExampleAttempts {
		a := g.h.AttemptsOf(int(j))
		if room := maxExampleAttempts - len(out); len(a) > room {
			a = a[:room]
		}
		out = append(out, a...)
		if !g.shared(i) {
			break
		}
		j = g.next[j]
	}
	if out == nil {
		out = []history.Attempt{}
	}
	runIDs(g.h, out)
	return out
}

// ops returns how many ops use leader i's key.
func (g *keys) ops(i int) int {
	if !g.shared(i) {
		return 1
	}
	n := 0
	for j := int32(i); j >= 0; j = g.next[j] {
		n++
	}
	return n
}
