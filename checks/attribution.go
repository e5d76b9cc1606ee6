package checks

import (
	"cmp"
	"slices"

	"github.com/idemcheck/idemcheck/history"
)

// A violation says what broke; the faults that came before it say why.
// "43 of 43 violating keys had a timeout on their first attempt, as 16 %
// of all keys did" sends whoever fixes the API to the code that handles a
// client giving up. Each checker that judges operations one by one blames
// the faults of every operation it finds violating; the Judger counts the
// same faults over every operation of the run, so a fault shared by all
// violations is told apart from a fault every operation had.

// Attribution is which faults the violating operations of one invariant
// had, beside how many of all the run's operations had them.
type Attribution struct {
	// Violating is how many violating operations are counted (a key used
	// by several operations counts once); Ops how many operations the run
	// had.
	Violating int `json:"violating"`
	Ops       int `json:"ops"`
	// Faults are the faults seen, most frequent among the violating
	// operations first. An operation with several faults counts under
	// each; one with none counts under Fault "".
	Faults []FaultShare `json:"faults"`
}

// FaultShare is one fault kind on one attempt number: how many violating
// operations had it, and how many of all operations.
type FaultShare struct {
	// Fault is the fault's kind ("timeout"), or "" for no fault at all.
	Fault string `json:"fault"`
	// Attempt is the attempt it first came on, 1-based; 0 when Fault is "".
	Attempt   int `json:"attempt,omitempty"`
	Violating int `json:"violating"`
	All       int `json:"all"`
}

// faultAt is one fault kind on the attempt it first came on.
type faultAt struct {
	kind string
	n    int
}

// blame counts operations by the faults their attempts carried.
type blame struct {
	ops int
	by  map[faultAt]int
}

// add counts one operation with attempts atts of a run described by meta.
// A fault counts where it bit (when the run recorded it) and on the first
// attempt that carried it; replays and other-payload sends are requests
// the scenario makes, not faults.
func (b *blame) add(meta *history.Meta, atts []history.Attempt) {
	if b.by == nil {
		b.by = map[faultAt]int{}
	}
	b.ops++
	var seen []faultAt
	for i := range atts {
		a := &atts[i]
		if a.Fault == "" || history.IsReplay(a.Fault) || (meta.BitRecorded && !a.Bit) {
			continue
		}
		if slices.ContainsFunc(seen, func(f faultAt) bool { return f.kind == a.Fault }) {
			continue
		}
		seen = append(seen, faultAt{a.Fault, a.N})
	}
	if len(seen) == 0 {
		b.by[faultAt{}]++
	}
	for _, f := range seen {
		b.by[f]++
	}
}

// merge adds o's counts to b.
func (b *blame) merge(o blame) {
	if b.by == nil {
		b.by = map[faultAt]int{}
	}
	b.ops += o.ops
	for f, n := range o.by {
		b.by[f] += n
	}
}

// faulted says whether any operation counted had a fault.
func (b *blame) faulted() bool {
	for f, n := range b.by {
		if f.kind != "" && n > 0 {
			return true
		}
	}
	return false
}

// attribution sets the violating operations' faults beside all's; nil
// when nothing was blamed or the run injected no fault.
func (b *blame) attribution(all *blame) *Attribution {
	if b == nil || b.ops == 0 || !all.faulted() {
		return nil
	}
	out := &Attribution{Violating: b.ops, Ops: all.ops, Faults: []FaultShare{}}
	for f, n := range all.by {
		out.Faults = append(out.Faults, FaultShare{Fault: f.kind, Attempt: f.n, Violating: b.by[f], All: n})
	}
	for f, n := range b.by {
		if _, ok := all.by[f]; !ok { // judged alone (Check), not through a Judger
			out.Faults = append(out.Faults, FaultShare{Fault: f.kind, Attempt: f.n, Violating: n})
		}
	}
	slices.SortFunc(out.Faults, func(x, y FaultShare) int {
		return cmp.Or(cmp.Compare(y.Violating, x.Violating), cmp.Compare(y.All, x.All),
			cmp.Compare(x.Fault, y.Fault), cmp.Compare(x.Attempt, y.Attempt))
	})
	return out
}

// blamer is a checker that blames the faults of the operations it finds
// violating.
type blamer interface{ blamed() *blame }
