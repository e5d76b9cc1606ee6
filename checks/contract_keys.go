package checks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// The checks on keys as a store keeps them (C24–C27): a key forgotten
// after other keys, keys in flight together sharing a record, keyless
// requests sharing one, keys told apart by a prefix only. Each reads only
// the history: which request was which is in its label (Role), how many
// keys came between two requests in the attempts' times.

// Roles of C24–C27's requests.
const (
	// RoleFlood is one of C24's fresh keys sent between a key and its
	// retry.
	RoleFlood = "another fresh key"
	// RoleKeylessFirst and RoleKeylessSecond are C26's requests without a
	// key, from the first customer and from the second (--as).
	RoleKeylessFirst  = "the first customer without a key"
	RoleKeylessSecond = "the second customer without a key (--as)"
	// RolePrefixed is C27's second key: the first key's first characters,
	// then others.
	RolePrefixed = "another key with the same prefix"
)

// RetentionCheckpoints are the numbers of fresh keys after which C24
// retries one of its first keys, for a flood of n: an eighth, a quarter,
// half and all of n (those that differ, at least 1).
func RetentionCheckpoints(n int) []int {
	var out []int
	for _, d := range []int{8, 4, 2, 1} {
		if c := n / d; c >= 1 && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// PrefixLengths are the lengths of the prefixes C27's pairs of keys share.
var PrefixLengths = []int{32, 50, 64, 128, 255}

// sameAnswer reports whether a is about first's resource: its identity,
// a replay of it, or its resource inside another shape.
func (c *contractRun) sameAnswer(a, first *history.Attempt) bool {
	return a.Acked() && first.Acked() && (identity(a) == identity(first) || c.replayOf(a, first) || carries(a, first))
}

func judgeC24(c *contractRun, ops []probeOp) {
	// A first key is retried after fresh keys; the keys sent between its
	// first answer and its retry are counted from the attempts' times.
	type probed struct {
		o            probeOp
		first, retry *history.Attempt
		after        int
	}
	var firsts []probed
	var starts []*history.Attempt // the first request of every fresh key answered 2xx
	refused := 0
	for _, o := range ops {
		if f := o.one(RoleFirst); f != nil {
			firsts = append(firsts, probed{o: o, first: f, retry: o.one(RoleRetry)})
			if f.Acked() {
				starts = append(starts, f)
			}
			continue
		}
		if f := o.one(RoleFlood); f != nil {
			if f.Acked() {
				starts = append(starts, f)
			} else {
				refused++
			}
		}
	}
	var keys []string
	replayedAfter, checked := -1, []string{}
	for i := range firsts {
		p := &firsts[i]
		if p.retry == nil {
			continue
		}
		if !c.first(p.first, "a first key's request") {
			continue
		}
		for _, s := range starts {
			if s != p.first && s.Start > p.first.End && s.Start < p.retry.Start {
				p.after++
			}
		}
		if ret := c.ct.Retention; ret > 0 && p.retry.Start-p.first.Start >= ret {
			// A key past the declared retention may rightly be forgotten:
			// its retry tells nothing of a retention by count.
			c.show(p.retry)
			c.unknown("a key's retry after %d other keys came %v after its first request, past the declared retention (%v), whose expiry would explain a re-execution: not judged (raise --retention, or send fewer --retention-keys)",
				p.after, (p.retry.Start - p.first.Start).Round(time.Millisecond), ret)
			continue
		}
		checked = append(checked, fmt.Sprint(p.after))
		c.show(p.retry)
		keys = append(keys, p.o.Key)
		switch {
		case c.bad(p.retry, fmt.Sprintf("the retry after %d other keys", p.after)):
		case c.sameAnswer(p.retry, p.first):
			replayedAfter = max(replayedAfter, p.after)
		case p.retry.Acked():
			was := ""
			if replayedAfter >= 0 {
				was = fmt.Sprintf("; after %d it was still replayed", replayedAfter)
			}
			c.twice(p.o.Key, High, "a key's retry after %d other keys names another resource (%s, first %s): the API keeps keys by count, not for a time%s",
				p.after, identity(p.retry), identity(p.first), was)
		default:
			c.fail(High, "a key's retry after %d other keys was answered %d, not its first answer (%d): the key was forgotten", p.after, p.retry.Status, p.first.Status)
		}
	}
	if refused > 0 {
		c.note("%d of the fresh keys were refused (not counted)", refused)
	}
	if len(checked) == 0 {
		if len(c.findings) == 0 {
			c.unknown("no first key was answered 2xx and retried: nothing to judge")
		}
		return
	}
	how := "judged from the answers alone"
	if c.once(keys...) {
		how = "1 effect per key"
	}
	c.pass = fmt.Sprintf("a key's retry was still replayed after %d other keys (retried after %s keys; %s)", replayedAfter, strings.Join(checked, ", "), how)
}

func judgeC25(c *contractRun, ops []probeOp) {
	byRound := map[int][]probeOp{}
	var order []int
	for _, o := range ops {
		r := roundOfOp(o)
		if _, ok := byRound[r]; !ok {
			order = append(order, r)
		}
		byRound[r] = append(byRound[r], o)
	}
	slices.Sort(order)
	var keys []string
	refused := 0
	for _, r := range order {
		round := byRound[r]
		// The first 2xx of each key: no two keys may share one.
		type answered struct {
			key   string
			first *history.Attempt
		}
		var firsts []answered
		firstOf := func(key string) *history.Attempt {
			for _, f := range firsts {
				if f.key == key {
					return f.first
				}
			}
			return nil
		}
		for _, o := range round {
			f := o.one(RoleFirst)
			c.show(f)
			switch {
			case c.bad(f, fmt.Sprintf("round %d: a key sent at once with others", r)):
			case f.Acked():
				for _, g := range firsts {
					if c.sharedAnswer(f, g.first) {
						c.unknownShared("keys sent at once")
						break
					}
					if c.sameAnswer(f, g.first) {
						c.show(g.first)
						c.fail(High, "round %d: keys %s and %s sent at once got the same answer (%s): concurrent keys share one record", r, g.key, o.Key, identity(g.first))
					}
				}
				firsts = append(firsts, answered{o.Key, f})
			case f.Status == 429:
				refused++
			default:
				c.fail(High, "round %d: a fresh key sent at once with %d others was answered %d: a valid request refused because of other keys", r, len(round)-1, f.Status)
			}
		}
		for _, o := range round {
			f, retry := firstOf(o.Key), o.one(RoleRetry)
			if f == nil || retry == nil {
				if retry != nil && retry.Acked() {
					keys = append(keys, o.Key)
				}
				continue
			}
			c.show(retry)
			keys = append(keys, o.Key)
			switch {
			case c.bad(retry, fmt.Sprintf("round %d: the retry of key %s", r, o.Key)):
			case c.sameAnswer(retry, f):
			case retry.Acked():
				other := ""
				for _, g := range firsts {
					if g.key != o.Key && c.sameAnswer(retry, g.first) {
						other = g.key
						break
					}
				}
				if other != "" {
					c.fail(High, "round %d: the retry of key %s got key %s's answer (%s): concurrent keys share one record", r, o.Key, other, identity(retry))
					continue
				}
				c.twice(o.Key, High, "round %d: the retry of key %s names another resource (%s, first %s)", r, o.Key, identity(retry), identity(f))
			default:
				c.fail(High, "round %d: the retry of key %s after its %d was answered %d: its record was lost", r, o.Key, f.Status, retry.Status)
			}
		}
	}
	if refused > 0 {
		c.note("%d keys were refused 429 (rate limited) at first", refused)
	}
	n := len(byRound[order[0]])
	if c.once(keys...) {
		c.pass = fmt.Sprintf("%d rounds of %d different keys at once, then each retried: each retry got its own key's answer; 1 effect per key", len(order), n)
	} else {
		c.pass = fmt.Sprintf("%d rounds of %d different keys at once, then each retried: each retry got its own key's answer (judged from the answers alone)", len(order), n)
	}
}

func judgeC26(c *contractRun, ops []probeOp) {
	type pair struct{ a, b *history.Attempt }
	rounds := map[int]*pair{}
	var order []int
	for _, o := range ops {
		r := roundOfOp(o)
		p := rounds[r]
		if p == nil {
			p = &pair{}
			rounds[r] = p
			order = append(order, r)
		}
		if e := o.one(RoleKeylessFirst); e != nil {
			p.a = e
		}
		if e := o.one(RoleKeylessSecond); e != nil {
			p.b = e
		}
	}
	slices.Sort(order)
	processed, refusedAll := 0, []string{}
	for _, r := range order {
		p := rounds[r]
		c.show(p.a, p.b)
		if c.bad(p.a, "the first customer's request without a key") {
			continue
		}
		if !p.a.Acked() {
			refusedAll = append(refusedAll, fmt.Sprint(p.a.Status))
			continue
		}
		switch b := p.b; {
		case c.bad(b, "the second customer's request without a key"):
		case b.Status == 401 || b.Status == 403:
			c.unknown("the second customer was refused (%d): check --as", b.Status)
		case c.sharedAnswer(b, p.a) && !c.replayOf(b, p.a):
			c.unknownShared("two customers' requests without a key")
		case c.sameAnswer(b, p.a):
			c.fail(Critical, "round %d: the second customer's request without a key was served the first customer's answer (%s): keyless requests share one record, a data leak", r, identity(p.a))
		case b.Acked():
			processed++
		case b.Status == 429:
			c.note("round %d: the second customer was rate limited (429)", r)
		default:
			c.fail(High, "round %d: the second customer's request without a key was answered %d after the first customer's was processed: keyless requests share one record", r, b.Status)
		}
	}
	switch {
	case processed > 0:
		c.pass = fmt.Sprintf("requests without a key from two customers: each processed on its own (%d rounds)", processed)
	case len(refusedAll) > 0:
		c.pass = fmt.Sprintf("requests without a key are refused (%s): no record to share", strings.Join(uniq(refusedAll), ", "))
	}
}

func judgeC27(c *contractRun, ops []probeOp) {
	type pair struct{ a, b probeOp }
	rounds := map[int]*pair{}
	var order []int
	for _, o := range ops {
		r := roundOfOp(o)
		p := rounds[r]
		if p == nil {
			p = &pair{}
			rounds[r] = p
			order = append(order, r)
		}
		if o.one(RolePrefixed) != nil {
			p.b = o
		} else {
			p.a = o
		}
	}
	slices.Sort(order)
	var keys, told, long []string
	merged := 0
	for _, r := range order {
		p := rounds[r]
		a, b := p.a.one(RoleFirst), p.b.one(RolePrefixed)
		if a == nil {
			continue
		}
		shared := commonPrefix(p.a.Key, p.b.Key)
		c.show(a)
		if c.bad(a, fmt.Sprintf("a key of %d characters", len(p.a.Key))) {
			continue
		}
		if !a.Acked() {
			long = append(long, fmt.Sprintf("%d characters (%d)", len(p.a.Key), a.Status))
			continue
		}
		if b == nil {
			continue
		}
		c.show(b)
		switch {
		case c.bad(b, fmt.Sprintf("a key sharing its first %d characters with another", shared)):
		case c.sharedAnswer(b, a) && !c.replayOf(b, a):
			c.unknownShared("two keys with a long shared prefix")
		case c.sameAnswer(b, a):
			merged++
			c.fail(High, "a key sharing only its first %d characters with a used key got that key's answer (%s): keys are cut to %d characters or fewer, two operations merged into one", shared, identity(a), shared)
		case b.Acked():
			keys = append(keys, p.a.Key, p.b.Key)
			told = append(told, fmt.Sprint(shared))
		default:
			merged++
			c.fail(High, "a key sharing only its first %d characters with a used key was answered %d: keys are compared on %d characters or fewer, a valid request refused", shared, b.Status, shared)
		}
	}
	if len(long) > 0 {
		c.note("keys of %s refused: not tested", strings.Join(long, ", "))
	}
	if len(told) == 0 {
		if merged == 0 {
			c.unknown("no pair of keys could be tested: the first key of each was refused")
		}
		return
	}
	how := "judged from the answers alone"
	if c.once(keys...) {
		how = "1 effect per key"
	}
	c.pass = fmt.Sprintf("keys equal for their first %s characters, then differing: each processed on its own (%s)", strings.Join(told, ", "), how)
}

// commonPrefix is how many leading bytes a and b share.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// SameResource reports whether the 2xx answer a is about b's resource: the
// same identity (its "id", else its Location, else its body), or b's
// resource inside another shape. A probe that adapts to what it saw (C24)
// asks it.
func SameResource(a, b *history.Attempt) bool {
	return a.Acked() && b.Acked() && (identity(a) == identity(b) || carries(a, b))
}
