package checks

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

// checkAccount checks a compare-and-set account: the balance moved by the
// sum of the applied amounts, the version advanced once per applied
// operation, and each op was applied as exactly_once allows (acknowledged:
// once; never sent: never; indeterminate, e.g. a 409 stale after a lost
// ack: 0 or 1). Applied entries whose key no op used count in the
// arithmetic only.
type accountCheck struct {
	acc     *history.Account
	applied map[string]int // applications per key, from acc
	r       keyResult
}

func newAccountCheck(acc *history.Account) *accountCheck {
	c := &accountCheck{acc: acc, applied: make(map[string]int, len(acc.Applied))}
	for _, a := range acc.Applied {
		c.applied[a.Key]++
	}
	return c
}

func (c *accountCheck) add(h *history.History) {
	c.r.add(perKey(groupKeys(h), c.applied, true, appliedNoun))
}

func (c *accountCheck) blamed() *blame { return &c.r.blame }

func (c *accountCheck) verdict(v Verdict) Verdict {
	acc, r := c.acc, c.r
	var sum int64
	for _, a := range acc.Applied {
		sum += a.Amount
	}
	r.fill(&v)

	var problems []string
	wantBalance := acc.BalanceBefore - sum
	n := int64(len(acc.Applied))
	if acc.BalanceAfter != wantBalance {
		problems = append(problems, fmt.Sprintf("balance %d -> %d, want %d (%d − %d over %s)",
			acc.BalanceBefore, acc.BalanceAfter, wantBalance, acc.BalanceBefore, sum, plural(len(acc.Applied), "applied op", "applied ops")))
	}
	if acc.VersionAfter-acc.VersionBefore != n {
		problems = append(problems, fmt.Sprintf("version %d -> %d, want %d (one step per applied op)",
			acc.VersionBefore, acc.VersionAfter, acc.VersionBefore+n))
	}
	if r.extra > 0 {
		problems = append(problems, fmt.Sprintf("%d of %s applied more than allowed (%d extra)",
			r.over, plural(r.checked, "key", "keys"), r.extra))
	}
	if r.missing > 0 {
		problems = append(problems, fmt.Sprintf("%s acknowledged but not applied", plural(r.missing, "op", "ops")))
	}
	if len(problems) == 0 {
		v.Status = Pass
		v.Summary = fmt.Sprintf("balance %d -> %d and version %d -> %d match %s totalling %d; %s: %s",
			acc.BalanceBefore, acc.BalanceAfter, acc.VersionBefore, acc.VersionAfter,
			plural(len(acc.Applied), "applied op", "applied ops"), sum, plural(r.checked, "key", "keys"), stateText(r))
		return v
	}
	v.Status = Fail
	v.Summary = strings.Join(problems, "; ")
	return v
}
