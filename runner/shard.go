package runner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

// Shard is one part of a run made by several processes: shard Index of
// Count. The ops of the whole run are numbered as in one process; shard i
// makes ops i, i+n, i+2n, … of them, so the shards' keys are disjoint and
// each op's key, faults, target and body depend only on (seed, op,
// attempt), whichever shard makes it. The zero Shard is the whole run.
type Shard struct {
	Index, Count int
}

// ParseShard parses "i/n" (0 <= i < n).
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	si, err1 := strconv.Atoi(i)
	sn, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/n, e.g. 0/4", s)
	}
	if sn < 1 {
		return Shard{}, fmt.Errorf("shard %q: want at least one shard", s)
	}
	sh := Shard{Index: si, Count: sn}
	return sh, sh.Check()
}

// Check reports whether s is a shard of a run: 0 <= Index < Count, or the
// zero Shard.
func (s Shard) Check() error {
	switch {
	case s == Shard{}:
		return nil
	case s.Count < 1:
		return fmt.Errorf("shard %d/%d: want at least one shard", s.Index, s.Count)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("shard %d/%d: the index goes from 0 to %d", s.Index, s.Count, s.Count-1)
	}
	return nil
}

// String returns "i/n", or "" for the whole run.
func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// n is the number of shards, 1 for the whole run.
func (s Shard) n() int { return max(s.Count, 1) }

// Global is the run's number of the shard's k-th op (from 0).
func (s Shard) Global(k int) int { return s.Index + k*s.n() }

// Local is the shard's number of the run's op id (one of its own).
func (s Shard) Local(id int) int { return (id - s.Index) / s.n() }

// Ops is how many of the run's first ops ops the shard makes.
func (s Shard) Ops(ops int) int {
	if ops <= s.Index {
		return 0
	}
	return (ops - s.Index + s.n() - 1) / s.n()
}

// part is the shard's part of a total of workers or ops in flight, split
// so that the shards' parts add up to it (the first total mod n shards
// take one more), but never below 1 when total is not 0: a shard needs a
// worker.
func (s Shard) part(total int) int {
	if total <= 0 {
		return total
	}
	p := total / s.n()
	if s.Index < total%s.n() {
		p++
	}
	return max(p, 1)
}

// localize renumbers a shard's history from the run's op ids to the
// shard's own (0, 1, 2…), which history files need. The ops the run made
// under its global ids are those of the shard; the others merge left
// empty.
func (s Shard) localize(h *history.History) {
	if s.n() == 1 {
		return
	}
	ops := make([]history.Op, 0, len(h.Ops)/s.n()+1)
	for _, o := range h.Ops {
		if o.ID%s.n() != s.Index {
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
