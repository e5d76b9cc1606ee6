package checks

import (
	"fmt"
	"slices"

	"github.com/idemcheck/idemcheck/history"
)

// The roles of W01's deliveries (an audit with --webhook).
const (
	// RoleBadSignature is a delivery signed with another key.
	RoleBadSignature = "a delivery signed with another key"
	// RoleStale is a delivery signed rightly, stamped outside the
	// provider's tolerance (an hour ago).
	RoleStale = "a delivery stamped an hour ago"
	// RoleGenuine is a genuine delivery of an event after a forged one
	// with its id.
	RoleGenuine = "the same event signed rightly"
	// RoleApplied is the genuine delivery of an event a forged
	// redelivery (RoleForgedAgain) follows.
	RoleApplied = "an event delivered genuine"
	// RoleForgedAgain is a redelivery of an applied event, signed with
	// another key.
	RoleForgedAgain = "its redelivery signed with another key"
)

// judgeW01 judges forged webhook deliveries: each must be refused with a
// 4xx and have no effect, and must not burn its event id (a genuine
// delivery of the same event after it is applied, once).
func judgeW01(c *contractRun, ops []probeOp) {
	var forgedOnly, followed, again []string
	judged := 0
	for _, o := range ops {
		if first := o.one(RoleApplied); first != nil {
			if judgeForgedAgain(c, o, first) {
				judged++
				again = append(again, o.Key)
			}
			continue
		}
		forged, what := o.one(RoleBadSignature), "signed with another key"
		if forged == nil {
			forged, what = o.one(RoleStale), "stamped an hour ago"
		}
		if !judgeForgery(c, forged, fmt.Sprintf("a forged delivery (%s)", what), Critical, "was accepted") {
			continue // not sent, or no answer: nothing to judge
		}
		judged++
		genuine := o.one(RoleGenuine)
		if genuine == nil {
			forgedOnly = append(forgedOnly, o.Key)
			continue
		}
		c.show(genuine)
		switch {
		case c.bad(genuine, "the genuine delivery after a forged one"):
		case !genuine.Acked():
			c.fail(High, "a genuine delivery of an event after a forged one with its id was answered %d: the forgery burnt the event id, and the provider will redeliver it in vain", genuine.Status)
		default:
			followed = append(followed, o.Key)
		}
	}
	if judged == 0 {
		return
	}
	n := c.count(slices.Concat(forgedOnly, followed, again)...)
	if n == nil {
		c.pass = fmt.Sprintf("%d forged deliveries (another key, an hour-old timestamp, a redelivery of an applied event) each refused with a 4xx; a genuine delivery after one applied (judged from the answers alone: a receiver that applies before it verifies answers the same, --effects counts)", judged)
		return
	}
	for _, k := range forgedOnly {
		if n[k] > 0 {
			c.fail(Critical, "event %s: a forged delivery had an effect (%d): applied before, or without, verifying it", k, n[k])
		}
	}
	oneEach(c, n, followed, "the genuine delivery was acknowledged but had no effect: the forged one before it burnt the event id",
		"effects from a forged delivery and a genuine one: the forgery was applied too")
	oneEach(c, n, again, "acknowledged, but no effect",
		"effects from a genuine delivery and its forged redelivery: the forgery was applied again")
	c.pass = fmt.Sprintf("%d forged deliveries (another key, an hour-old timestamp, a redelivery of an applied event) each refused with a 4xx and no effect; a genuine delivery after one applied once", judged)
}

// judgeForgedAgain judges an event delivered genuine, then redelivered
// forged: the forgery must be refused 4xx, not answered with the stored
// answer (a receiver that deduplicates before it verifies hands its
// answers to anyone who knows an event id). It reports whether the
// forgery was judged, the op's effects to be counted (one).
func judgeForgedAgain(c *contractRun, o probeOp, first *history.Attempt) bool {
	if !c.first(first, "the genuine delivery") {
		return false
	}
	return judgeForgery(c, o.one(RoleForgedAgain), "a forged redelivery of an applied event", High,
		"was not refused: the receiver deduplicated (and answered) before it verified the signature")
}

// judgeForgery judges one forged delivery, described by desc: a 2xx
// fails at accepted's severity (what says what it means), a 5xx or a hang
// high, another non-4xx medium. It reports whether the delivery was
// judged (false: not sent, or no answer).
func judgeForgery(c *contractRun, forged *history.Attempt, desc string, accepted Severity, what string) bool {
	c.show(forged)
	switch {
	case forged != nil && forged.Acked():
		c.fail(accepted, "%s %s: answered %d", desc, what, forged.Status)
	case forged != nil && is5xx(forged):
		c.fail(High, "%s was answered %d, not 4xx: it got past verification, or crashed the receiver", desc, forged.Status)
	case c.bad(forged, desc):
		return forged != nil && forged.Expired
	case forged.Status < 400 || forged.Status > 499:
		c.fail(Medium, "%s was answered %d, not 4xx", desc, forged.Status)
	}
	return true
}

// oneEach fails (critical) each event of keys without exactly one effect
// in n: none says none, more than one says many after the count.
func oneEach(c *contractRun, n map[string]int, keys []string, none, many string) {
	for _, k := range keys {
		switch {
		case n[k] == 0:
			c.fail(Critical, "event %s: %s", k, none)
		case n[k] > 1:
			c.fail(Critical, "event %s: %d %s", k, n[k], many)
		}
	}
}
