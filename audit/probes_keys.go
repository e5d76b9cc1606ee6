package audit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

// The probes of the checks on keys as a store keeps them (C24–C27).

// C25 sends c25Rounds rounds of c25Keys different keys at once; c24Flood is
// how many of C24's fresh keys are in flight at once.
const (
	c25Rounds = 2
	c25Keys   = 10
	c24Flood  = 8
)

// probeC24 sends one first key per checkpoint, then fresh keys up to each
// checkpoint in turn, retrying one first key after each: a store that
// keeps keys by count forgets the first keys. It stops at the first retry
// that is not answered its first answer.
func probeC24(ctx context.Context, a *Auditor) time.Duration {
	cps := checks.RetentionCheckpoints(a.cfg.RetentionKeys)
	type first struct {
		o   op
		got *history.Attempt
	}
	var firsts []first
	for i := range cps {
		o, err := a.newOp(ctx, "C24")
		if err != nil {
			return 0
		}
		got := a.send(ctx, req{label: label(i+1, checks.RoleFirst, ""), op: o})
		firsts = append(firsts, first{o, got})
	}
	var keys []string
	sent := 0
	for i, cp := range cps {
		if ctx.Err() != nil || !a.flood(ctx, cp-sent) {
			break
		}
		sent = cp
		f := firsts[i]
		if !f.got.Acked() {
			continue
		}
		keys = append(keys, f.o.key)
		retry := a.send(ctx, req{label: label(i+1, checks.RoleRetry, fmt.Sprintf("after %d fresh keys", cp)), op: f.o})
		if !retry.Acked() || !checks.SameResource(retry, f.got) {
			break // forgotten: later retries would say it again, later
		}
	}
	a.effects(ctx, "C24", keys...)
	return 0
}

// flood sends n fresh keys, c24Flood at a time; it reports whether every
// one was sent (not cut by ctx or the request cap).
func (a *Auditor) flood(ctx context.Context, n int) bool {
	var mu sync.Mutex
	ok := true
	next := 0
	var wg sync.WaitGroup
	for range min(c24Flood, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				mu.Lock()
				if next >= n || !ok {
					mu.Unlock()
					return
				}
				next++
				mu.Unlock()
				o, err := a.newOp(ctx, "C24")
				if err != nil {
					mu.Lock()
					ok = false
					mu.Unlock()
					return
				}
				if e := a.send(ctx, req{label: label(0, checks.RoleFlood, ""), op: o}); e.Err == errBudget.Error() {
					mu.Lock()
					ok = false
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return ok && ctx.Err() == nil
}

// probeC25 sends rounds of different keys at once, then retries each.
func probeC25(ctx context.Context, a *Auditor) time.Duration {
	var keys []string
	for round := 1; round <= c25Rounds && ctx.Err() == nil; round++ {
		ops := make([]op, c25Keys)
		rs := make([]req, c25Keys)
		for i := range ops {
			o, err := a.newOp(ctx, "C25")
			if err != nil {
				return 0
			}
			ops[i] = o
			rs[i] = req{label: label(round, checks.RoleFirst, fmt.Sprintf("key %d of %d sent at once", i+1, c25Keys)), op: o, target: i}
		}
		a.together(ctx, rs)
		for i, o := range ops {
			a.send(ctx, req{label: label(round, checks.RoleRetry, fmt.Sprintf("key %d", i+1)), op: o})
			keys = append(keys, o.key)
		}
	}
	a.effects(ctx, "C25", keys...)
	return 0
}

// probeC26 sends requests without a key from the first customer, then from
// the second (--as), each with its own body.
func probeC26(ctx context.Context, a *Auditor) time.Duration {
	for round := 1; round <= 2 && ctx.Err() == nil; round++ {
		first, err := a.newOp(ctx, "C26")
		if err != nil {
			return 0
		}
		a.send(ctx, req{label: label(round, checks.RoleKeylessFirst, ""), op: first, noKey: true})
		second, err := a.newOp(ctx, "C26")
		if err != nil {
			return 0
		}
		a.send(ctx, req{label: label(round, checks.RoleKeylessSecond, ""), op: second, noKey: true, as: true})
	}
	return 0
}

// probeC27 sends pairs of keys equal on a long prefix, then differing: the
// first key, then the second.
func probeC27(ctx context.Context, a *Auditor) time.Duration {
	var keys []string
	for round, n := range checks.PrefixLengths {
		if ctx.Err() != nil {
			break
		}
		prefix, tail := a.randHex(n), a.randHex(16)
		// The tails differ from their first character.
		k1, k2 := prefix+"a"+tail[:7], prefix+"b"+tail[8:15]
		o1, err := a.newOpKey(ctx, "C27", k1)
		if err != nil {
			return 0
		}
		first := a.send(ctx, req{label: label(round+1, checks.RoleFirst, fmt.Sprintf("a key of %d characters", len(k1))), op: o1})
		if !first.Acked() {
			continue
		}
		o2, err := a.newOpKey(ctx, "C27", k2)
		if err != nil {
			return 0
		}
		if a.send(ctx, req{label: label(round+1, checks.RolePrefixed, fmt.Sprintf("equal for %d characters", n)), op: o2}).Acked() {
			keys = append(keys, k1, k2)
		}
	}
	a.effects(ctx, "C27", keys...)
	return 0
}
