package runner

import (
	"github.com/idemcheck/idemcheck/history"
)

// Chunk sizes of the per-worker records: small at first so that hundreds of
// open-model workers cost little, then up to maxChunk items. Chunks are
// never copied while the run goes on, and the slack is at most one chunk
// per worker.
const (
	minChunk = 64
	maxChunk = 8192
)

// chunks is an append-only list stored in chunks of growing size.
type chunks[T any] struct {
	full [][]T
	cur  []T
	n    int
}

func (c *chunks[T]) add(v T) {
	if len(c.cur) == cap(c.cur) {
		size := min(max(2*cap(c.cur), minChunk), maxChunk)
		if c.cur != nil {
			c.full = append(c.full, c.cur)
		}
		c.cur = make([]T, 0, size)
	}
	c.cur = append(c.cur, v)
	c.n++
}

// drain calls f on every chunk in order and drops it, so its memory can be
// reclaimed while the merged copy grows.
func (c *chunks[T]) drain(f func([]T)) {
	for i, ch := range c.full {
		f(ch)
		c.full[i] = nil
	}
	if c.cur != nil {
		f(c.cur)
	}
	c.full, c.cur, c.n = nil, nil, 0
}

// recorder is what one worker recorded: its ops and their attempts, each
// op's attempts in order. Only its worker touches it until the merge.
type recorder struct {
	ops      chunks[history.Op]
	attempts chunks[history.Attempt]
}

// merge builds the history from the workers' records: ops indexed by ID,
// attempts sorted by (op, attempt number) with a counting sort (each
// worker recorded an op's attempts in order).
func merge(recs []*recorder) (ops []history.Op, attempts []history.Attempt) {
	nOps, nAtt := 0, 0
	for _, r := range recs {
		if r == nil {
			continue
		}
		for _, ch := range r.ops.full {
			for i := range ch {
				nOps = max(nOps, ch[i].ID+1)
			}
		}
		for i := range r.ops.cur {
			nOps = max(nOps, r.ops.cur[i].ID+1)
		}
		nAtt += r.attempts.n
	}
	ops = make([]history.Op, nOps)
	for i := range ops {
		ops[i].ID = i
	}
	// first[op] is where op's attempts start in the merged slice.
	first := make([]int32, nOps+1)
	for _, r := range recs {
		if r == nil {
			continue
		}
		r.ops.drain(func(ch []history.Op) {
			for _, o := range ch {
				ops[o.ID] = o
			}
		})
		count := func(ch []history.Attempt) {
			for i := range ch {
				if op := ch[i].Op; op >= 0 && op < nOps {
					first[op+1]++
				}
			}
		}
		for _, ch := range r.attempts.full {
			count(ch)
		}
		count(r.attempts.cur)
	}
	for i := 1; i <= nOps; i++ {
		first[i] += first[i-1]
	}
	attempts = make([]history.Attempt, 0, nAtt)[:first[nOps]]
	for _, r := range recs {
		if r == nil {
			continue
		}
		r.attempts.drain(func(ch []history.Attempt) {
			for i := range ch {
				if op := ch[i].Op; op >= 0 && op < nOps {
					attempts[first[op]] = ch[i]
					first[op]++
				}
			}
		})
	}
	return ops, attempts
}
