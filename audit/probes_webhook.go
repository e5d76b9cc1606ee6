package audit

import (
	"context"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/webhooks"
)

// w01Rounds are W01's rounds.
const w01Rounds = 2

// webhookChecks are the checks an audit of a webhook receiver (--webhook)
// runs: what a provider does to an event (redeliver it after an answer,
// after a lost answer, a timeout or a reset; deliver it twice at once;
// deliver other events at once or with the same data; the receiver
// crashed mid-delivery) and forged deliveries. A provider never sends an
// event without its id, with another body, to another path or as another
// principal: those checks are skipped.
var webhookChecks = map[string]bool{
	"C03": true, "C06": true, "C09": true, "C10": true, "C11": true,
	"DK": true, "C25": true, "C28": true, "W01": true,
}

// probeW01 delivers forged events: per round, one signed with another key,
// one stamped an hour ago (where the scheme signs a timestamp), one
// forged, then delivered genuine, and one delivered genuine, then
// redelivered forged.
func probeW01(ctx context.Context, a *Auditor) time.Duration {
	forgeries := []webhooks.Forgery{webhooks.BadSignature}
	roles := []string{checks.RoleBadSignature}
	if a.hook.Timed() {
		forgeries, roles = append(forgeries, webhooks.Stale), append(roles, checks.RoleStale)
	}
	var keys []string
	for round := 1; round <= w01Rounds && ctx.Err() == nil; round++ {
		for i, f := range forgeries {
			o, err := a.newOp(ctx, "W01")
			if err != nil {
				return 0
			}
			a.send(ctx, req{label: label(round, roles[i], ""), op: o, forgery: f})
			keys = append(keys, o.key)
		}
		o, err := a.newOp(ctx, "W01")
		if err != nil {
			return 0
		}
		a.send(ctx, req{label: label(round, checks.RoleBadSignature, "then genuine"), op: o, forgery: webhooks.BadSignature})
		a.send(ctx, req{label: label(round, checks.RoleGenuine, ""), op: o})
		keys = append(keys, o.key)
		// an applied event redelivered forged: refused, not answered
		// from the store
		if o, err = a.newOp(ctx, "W01"); err != nil {
			return 0
		}
		if first := a.send(ctx, req{label: label(round, checks.RoleApplied, ""), op: o}); first.Acked() {
			a.send(ctx, req{label: label(round, checks.RoleForgedAgain, ""), op: o, forgery: webhooks.BadSignature})
		}
		keys = append(keys, o.key)
	}
	a.effects(ctx, "W01", keys...)
	return 0
}
