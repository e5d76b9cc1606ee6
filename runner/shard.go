package runner

import "github.com/idemcheck/idemcheck/history"

// A run can be made by several processes, each one shard of it
// (Options.Shard, a history.Shard): the ops of the whole run are numbered
// as in one process; shard i of n makes ops i, i+n, i+2n, … of them, so
// the shards' keys are disjoint and each op's key, faults, target and
// body depend only on (seed, op, attempt), whichever shard makes it. The
// zero Shard is the whole run.

// part is shard s's part of a total of workers or ops in flight, split
// so that the shards' parts add up to it (the first total mod n shards
// take one more), but never below 1 when total is not 0: a shard needs a
// worker.
func part(s history.Shard, total int) int {
	if total <= 0 {
		return total
	}
	n := max(s.Count, 1)
	p := total / n
	if s.Index < total%n {
		p++
	}
	return max(p, 1)
}

// localize renumbers shard s's history from the run's op ids to the
// shard's own (0, 1, 2…), which history files need. The ops the run made
// under its global ids are those of the shard; the others merge left
// empty.
func localize(s history.Shard, h *history.History) {
	n := max(s.Count, 1)
	if n == 1 {
		return
	}
	ops := make([]history.Op, 0, len(h.Ops)/n+1)
	for _, o := range h.Ops {
		if o.ID%n != s.Index {
			continue
		}
		o.ID = s.Local(o.ID)
		ops = append(ops, o)
	}
	for i := range h.Attempts {
		h.Attempts[i].Op = s.Local(h.Attempts[i].Op)
	}
	h.Ops = ops
	h.Sort()
}
