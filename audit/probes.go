package audit

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/pause"
	"github.com/idemcheck/idemcheck/scenarios"
)

// A probe sends a check's requests: what, in which order, and when to
// stop. It judges nothing: each request is an attempt of the audit's
// history, labelled with its role (checks.Label), and checks.JudgeContract
// judges the history. Where a probe adapts (a round tried again sooner, a
// retry while the key is in flight), it reads only what the client saw.

// Rounds and copies of the repeated probes. C06's are checks.RaceRounds,
// RaceCopies and RaceMaxRounds: the judge says how its rounds went.
const (
	c07Rounds = 3
	c07Copies = 4
	c08Rounds = 3
	c09Rounds = 3
	c10Rounds = 2
	// c10Retries are the rounds of C10 tried again, giving up sooner, when
	// the API answered before the client gave up: the calibration measured
	// a slow moment.
	c10Retries = 2
	// c10Unmet are the rounds of C10 added when a round's retry did not
	// meet the abandoned request in flight (checks.C10Overlapped): on a
	// loaded machine the first may end before its retry arrives, and a
	// round that tests nothing must not leave the check short of rounds
	// that do.
	c10Unmet  = 3
	c13Rounds = 2
	// c12Tries are the sends of the normal body after an error, while it
	// is not processed: a key refused to every one of them is burnt.
	c12Tries = 3
	// c14Copies are the concurrent requests sent just past the retention.
	c14Copies = 4
)

// noCache is the header C08's and C13's first attempts carry: a client
// forcing a fresh answer sends it, and a server that skips its handler
// for it must still not leave the key stuck.
var noCache = map[string]string{"Cache-Control": "no-cache"}

// probe is one check's probe: what it sends, and its run.
type probe struct {
	id, name string
	// severity is the worst the check can find.
	severity checks.Severity
	// probes says what is sent, for the plan and the docs.
	probes string
	// requests is the most requests the probe sends.
	requests func(a *Auditor) int
	// needs returns why the probe cannot run with this configuration, or "".
	needs func(a *Auditor) string
	// run sends the probe's requests; it returns the client deadline that
	// cut its requests short, if it cut any.
	run func(ctx context.Context, a *Auditor) time.Duration
}

func fixed(n int) func(*Auditor) int { return func(*Auditor) int { return n } }

// needsJSON skips a check that varies the body when the body is not a
// JSON object.
func needsJSON(a *Auditor) string {
	b, err := a.tmpl.Body(context.Background(), scenarios.Vars{Key: "00000000-0000-4000-8000-000000000000"})
	if err == nil {
		b, err = a.keyed(b, "00000000-0000-4000-8000-000000000000")
	}
	if err != nil || b == nil {
		return "the request has no JSON object body to vary"
	}
	if _, ok := mutate(b, "", 1); !ok {
		return "the request has no JSON object body to vary"
	}
	return ""
}

// probes are the checks' probes in the order they run, one per
// checks.ContractChecks entry.
func probes() []probe {
	ps := []probe{
		{id: "C01", requests: fixed(1), run: probeC01,
			probes: "the request without a key: the profile's answer (draft 400), nothing processed unless the profile processes it"},
		{id: "C02", run: probeC02,
			requests: func(a *Auditor) int {
				if a.keyHdr != "" {
					return len(checks.KeyShapes) + 2
				}
				return len(checks.KeyShapes)
			},
			probes: `an empty key, 300- and 500-character keys, a tab inside a key: 4xx, never 5xx; "quoted" and raw forms of one key: one key under draft`},
		{id: "C03", requests: fixed(4), run: probeC03,
			probes: "2 keys, each sent twice one after the other: the retry is answered like the first (2xx, same resource), one effect"},
		{id: "C04", requests: fixed(6), needs: needsJSON, run: probeC04,
			probes: "2 keys, each sent again with one body value changed, then with the original body: the profile's mismatch code (draft 422), never a second effect or a silent replay; the original still gets its first answer"},
		{id: "C05", requests: fixed(6), needs: needsJSON, run: probeC05,
			probes: "2 keys, each sent again as the same JSON with its fields reordered, and re-spaced: the same request (a replay)"},
		{id: "C06", requests: fixed(checks.RaceMaxRounds * checks.RaceCopies), run: probeC06,
			probes: fmt.Sprintf("%d rounds of %d identical copies held to their last byte and released together, and one more for each round inconclusive or near a race, up to %d: one execution, the others 409 or a replay, no 5xx, no hang",
				checks.RaceRounds, checks.RaceCopies, checks.RaceMaxRounds)},
		{id: "C07", requests: fixed(c07Rounds * (c07Copies + 1)), needs: needsJSON, run: probeC07,
			probes: fmt.Sprintf("%d rounds of %d copies with different bodies under one key, released together, then the processed body again: at most one executed, the others 409 or the mismatch code; the processed body gets its answer", c07Rounds, c07Copies)},
		{id: "C08", run: probeC08,
			requests: func(a *Auditor) int { return c08Rounds * (1 + a.settleTries(20*time.Millisecond)) },
			probes:   "a request (with Cache-Control: no-cache) and a copy while it is in flight; the copy's 409 retried unchanged: the first answer replayed within the lease, never 409 forever"},
		{id: "C09", run: probeC09,
			requests: func(a *Auditor) int { return c09Rounds * (1 + a.settleTries(10*time.Millisecond)) },
			probes:   fmt.Sprintf("%d keys whose first answer is dropped after the server sent it, then retried: the hidden answer replayed, one effect", c09Rounds)},
		{id: "C10", run: probeC10,
			requests: func(a *Auditor) int { return c10Rounds*(2+a.settleTries(2*time.Millisecond)) + c10Retries + 3*c10Unmet },
			probes:   fmt.Sprintf("%d keys whose first request the client gives up on at half the request's time (sooner, when it answered first), retried at once: 409 while in flight (or the retry held until it ends), then the replay; one effect. Up to %d rounds more when a retry arrived after the first ended", c10Rounds, c10Unmet)},
		{id: "C11", requests: fixed(2 * 4), run: probeC11,
			probes: "2 keys whose first attempt fails before a byte is written, then retried: processed once"},
		{id: "C12", requests: fixed(2 * (1 + c12Tries)), run: probeC12,
			needs: func(a *Auditor) string {
				if a.errTmpl == nil {
					return "give --error-data, a body the API fails on (a declined card), to test what an error leaves behind"
				}
				return ""
			},
			probes: fmt.Sprintf("2 keys sent first with --error-data (an error), then with the normal body (up to %d times while not processed): the declared --errors policy (cached: the error again; re-executed: processed), never an effect of the error, never a key burnt (refused for good, the error not replayed)", c12Tries)},
		{id: "C13", run: probeC13,
			requests: func(a *Auditor) int { return (c13Rounds + c10Retries) * (1 + a.settleTries(20*time.Millisecond)) },
			probes:   "a request (with Cache-Control: no-cache) the client abandons mid-flight, then retries: a replay (or the key usable again) within the lease, never 409 past it"},
		{id: "C14", requests: fixed(2 + c14Copies), run: probeC14,
			needs: func(a *Auditor) string {
				switch {
				case a.cfg.Retention == 0:
					return "give --retention (how long the API keeps keys) to test expiry"
				case a.cfg.Retention > MaxRetention:
					return fmt.Sprintf("retention %v is too long to wait out (at most %v)", a.cfg.Retention, MaxRetention)
				}
				return ""
			},
			probes: fmt.Sprintf("a key replayed at 3/4 of --retention (a replay), then %d concurrent copies just past it (one new execution)", c14Copies)},
		{id: "C15", run: probeC15,
			requests: func(a *Auditor) int {
				if a.oracle != nil {
					return 5
				}
				return 4
			},
			needs: func(a *Auditor) string {
				if len(a.as) == 0 {
					return "give --as with a second principal's credentials to test keys across users"
				}
				return ""
			},
			probes: "2 keys each sent by the first principal, then by the second (--as), and with --effects a key of the second's own: processed for each (2 effects per key when the oracle sees the second's), the second never gets the first's answer"},
		{id: "C16", requests: fixed(6), run: probeC16,
			probes: "2 keys sent, then again with a query string added (the same operation: a replay or a rejection), then to a sibling path (another operation: never the first path's answer)"},
		{id: "C17", requests: fixed(4), run: probeC17,
			probes: "2 keys sent twice: the replay's status, body (minus --volatile), Content-Type and Location equal the first answer's; the profile's replay marker"},
		{id: "C18", requests: fixed(2), run: probeC18,
			probes: "GET on the path with a key and without: the key is ignored (the same status)"},
		{id: "DK", requests: fixed(4), run: probeDK,
			probes: "2 rounds of one body sent under two fresh keys: two operations (dedup is by key, not by content)"},
		{id: "C24", run: probeC24,
			requests: func(a *Auditor) int {
				return a.cfg.RetentionKeys + 2*len(checks.RetentionCheckpoints(a.cfg.RetentionKeys))
			},
			needs: func(a *Auditor) string {
				if a.cfg.RetentionKeys == 0 {
					return "give --retention-keys N (how many other keys the API must outlive) to test retention by count"
				}
				return ""
			},
			probes: "keys retried after --retention-keys fresh keys (and after an eighth, a quarter and half as many): replayed, never executed again"},
		{id: "C25", requests: fixed(c25Rounds * c25Keys * 2), run: probeC25,
			probes: fmt.Sprintf("%d rounds of %d different keys released together, then each retried: each processed once, each retry its own key's answer", c25Rounds, c25Keys)},
		{id: "C26", requests: fixed(4), run: probeC26,
			needs: func(a *Auditor) string {
				if len(a.as) == 0 {
					return "give --as with a second customer's credentials to test requests without a key from two customers"
				}
				return ""
			},
			probes: "2 rounds of a request without a key from the first customer, then from the second (--as): each processed on its own (or refused), the second never served the first's answer"},
		{id: "C27", requests: fixed(2 * len(checks.PrefixLengths)), run: probeC27,
			probes: "pairs of keys equal for 32, 50, 64, 128 and 255 characters, then differing: both processed, neither refused nor replayed for the other"},
		{id: "C28", run: probeC28,
			requests: func(a *Auditor) int { return c28MaxRounds * (1 + a.settleTries(20*time.Millisecond)) },
			needs: func(a *Auditor) string {
				if a.cfg.Crash == nil {
					return "give --kill-cmd (with --start-cmd unless the platform restarts the API, and --ready) to crash the API while a request is in flight"
				}
				return ""
			},
			probes: fmt.Sprintf("%d requests each in flight when --kill-cmd kills the API (up to 4 crashes to catch them), retried once --start-cmd brought it back and --ready answers: processed once (a replay, or a first execution if the crash lost the key), never 409 past the lease, never twice", c28Rounds)},
		{id: "W01", run: probeW01,
			requests: func(a *Auditor) int {
				if a.hook != nil && a.hook.Timed() {
					return w01Rounds * 6
				}
				return w01Rounds * 5
			},
			needs: func(a *Auditor) string {
				if a.hook == nil {
					return "only with --webhook: forged deliveries to a webhook receiver"
				}
				return ""
			},
			probes: fmt.Sprintf("%d rounds of an event delivered signed with another key, one stamped an hour ago (where the profile signs a timestamp), one delivered forged, then genuine, and one delivered genuine, then redelivered forged: every forgery refused 4xx with no effect (never answered from the store), the genuine delivery after it applied once", w01Rounds)},
	}
	for i, c := range checks.ContractChecks() {
		if ps[i].id != c.ID {
			panic("audit: the probes and the contract checks are not in the same order: " + ps[i].id + " beside " + c.ID)
		}
		ps[i].name, ps[i].severity = c.Name, c.Severity
	}
	return ps
}

// skipReason says why p does not run, or "".
func (a *Auditor) skipReason(p probe) string {
	if a.selected != nil && !a.selected[p.id] {
		return "not selected (--checks)"
	}
	if why := mintChecks[p.id]; why != "" && a.minting() {
		return why
	}
	if a.hook != nil && !webhookChecks[p.id] {
		return "not a webhook check: a provider never sends this to its receiver"
	}
	if p.needs != nil {
		return p.needs(a)
	}
	return ""
}

func probeC01(ctx context.Context, a *Auditor) time.Duration {
	o, err := a.newOp(ctx, "C01")
	if err != nil {
		return 0
	}
	a.send(ctx, req{label: label(0, checks.RoleNoKey, ""), op: o, noKey: true})
	return 0
}

func probeC02(ctx context.Context, a *Auditor) time.Duration {
	k := a.newKey()
	keys := []string{"", a.randHex(300), a.randHex(500), k[:18] + "\t" + k[18:]}
	for i, s := range checks.KeyShapes {
		o, err := a.newOp(ctx, "C02")
		if err != nil {
			return 0
		}
		key := keys[i]
		r := req{label: s.What, op: o, key: &key}
		if a.keyField != "" {
			b, err := setField(o.body, a.keyField, key)
			if err != nil {
				return 0
			}
			r.body = b
		}
		a.send(ctx, r)
	}
	if a.keyHdr == "" {
		return 0
	}
	// The quoted (structured-field string) and raw forms of one key.
	o, err := a.newOp(ctx, "C02")
	if err != nil {
		return 0
	}
	quoted := `"` + o.key + `"`
	a.send(ctx, req{label: label(0, checks.RoleQuoted, ""), op: o, key: &quoted})
	a.send(ctx, req{label: label(0, checks.RoleRaw, ""), op: o})
	// Both forms' effects: an API that takes them for two keys charges
	// under each. The quoted form's in a reading of its own, which an
	// oracle refusing that form cannot spoil.
	a.effects(ctx, "C02", o.key)
	a.read(ctx, checks.QuotedReading, quoted)
	return 0
}

// rounds sends each of n rounds with send, then reads the effects of
// every key the rounds named.
func (a *Auditor) rounds(ctx context.Context, check string, n int, send func(round int, o op) bool) {
	var keys []string
	for round := 1; round <= n && ctx.Err() == nil; round++ {
		o, err := a.newOp(ctx, check)
		if err != nil {
			return
		}
		if send(round, o) {
			keys = append(keys, o.key)
		}
	}
	a.effects(ctx, check, keys...)
}

func probeC03(ctx context.Context, a *Auditor) time.Duration {
	a.rounds(ctx, "C03", 2, func(round int, o op) bool {
		if first := a.send(ctx, req{label: label(round, checks.RoleFirst, ""), op: o}); !first.Acked() {
			return false
		}
		a.send(ctx, req{label: label(round, checks.RoleIdentical, ""), op: o})
		return true
	})
	return 0
}

func probeC04(ctx context.Context, a *Auditor) time.Duration {
	a.rounds(ctx, "C04", 2, func(round int, o op) bool {
		other, _ := mutate(o.body, a.keyField, round)
		if first := a.send(ctx, req{label: label(round, checks.RoleFirst, ""), op: o}); !first.Acked() {
			return false
		}
		a.send(ctx, req{label: label(round, checks.RoleMismatch, ""), op: o, body: other})
		// The refusal must not replace the stored answer.
		a.send(ctx, req{label: label(round, checks.RoleOriginal, ""), op: o})
		return true
	})
	return 0
}

func probeC05(ctx context.Context, a *Auditor) time.Duration {
	a.rounds(ctx, "C05", 2, func(round int, o op) bool {
		reordered, respaced := equivalents(o.body)
		if first := a.send(ctx, req{label: label(round, checks.RoleFirst, ""), op: o}); !first.Acked() {
			return false
		}
		for _, v := range []struct {
			role string
			body []byte
		}{{checks.RoleReordered, reordered}, {checks.RoleRespaced, respaced}} {
			if v.body != nil {
				a.send(ctx, req{label: label(round, v.role, ""), op: o, body: v.body})
			}
		}
		return true
	})
	return 0
}

func probeC06(ctx context.Context, a *Auditor) time.Duration {
	var keys []string
	rounds := checks.RaceRounds
	for round := 1; round <= rounds && ctx.Err() == nil; round++ {
		o, err := a.newOp(ctx, "C06")
		if err != nil {
			return 0
		}
		rs := make([]req, checks.RaceCopies)
		for i := range rs {
			rs[i] = req{label: label(round, fmt.Sprintf("%s %d", checks.RoleCopy, i+1), ""), op: o, target: i}
		}
		copies := a.race(ctx, rs)
		if checks.RaceRound(copies) {
			rounds = min(rounds+1, checks.RaceMaxRounds)
		}
		for _, e := range copies {
			if e.Acked() {
				keys = append(keys, o.key)
				break
			}
		}
	}
	a.effects(ctx, "C06", keys...)
	return 0
}

// race sends concurrent copies of one request as closely together as the
// audit can: C06's copies go through it alone.
func (a *Auditor) race(ctx context.Context, rs []req) []*history.Attempt {
	return a.together(ctx, rs)
}

func probeC07(ctx context.Context, a *Auditor) time.Duration {
	a.rounds(ctx, "C07", c07Rounds, func(round int, o op) bool {
		rs := make([]req, c07Copies)
		for i := range rs {
			b := o.body
			if i > 0 {
				b, _ = mutate(o.body, a.keyField, i)
			}
			rs[i] = req{label: label(round, fmt.Sprintf("%s %d", checks.RoleBody, i+1), ""), op: o, body: b, target: i}
		}
		for i, e := range a.together(ctx, rs) {
			if e.Acked() {
				// The refusals of the other bodies must not replace the
				// processed one's stored answer.
				a.send(ctx, req{label: label(round, checks.RoleWinnerAgain, fmt.Sprintf("body %d", i+1)), op: o, body: rs[i].body})
				return true
			}
		}
		return false
	})
	return 0
}

func probeC08(ctx context.Context, a *Auditor) time.Duration {
	gap := min(max(a.latency/4, time.Millisecond), 50*time.Millisecond)
	informative := 0
	var keys []string
	for round := 1; round <= c08Rounds && informative < 2 && ctx.Err() == nil; round++ {
		o, err := a.newOp(ctx, "C08")
		if err != nil {
			return 0
		}
		done := make(chan *history.Attempt, 1)
		first := a.build(ctx, req{label: label(round, checks.RoleFirst, "with Cache-Control: no-cache"), op: o, headers: noCache})
		go func() { done <- a.sendBuilt(ctx, first) }()
		if !pause.For(ctx, gap) {
			<-done
			break
		}
		copyReq := req{label: label(round, checks.RoleCopyInFlight, ""), op: o, target: 1}
		cp := a.send(ctx, copyReq)
		<-done
		if !busy(cp) {
			continue // finished before the copy came, or no answer: nothing to retry
		}
		informative++
		keys = append(keys, o.key)
		copyReq.label = label(round, checks.RoleCopyRetried, "")
		tries := a.settle(ctx, copyReq, time.Now(), 20*time.Millisecond, a.settleTries(20*time.Millisecond)-1)
		if len(tries) > 0 && busy(tries[len(tries)-1]) {
			break // the key stayed in flight for the whole lease: another round would wait it out again
		}
	}
	a.effects(ctx, "C08", keys...)
	return 0
}

func probeC09(ctx context.Context, a *Auditor) time.Duration {
	a.rounds(ctx, "C09", c09Rounds, func(round int, o op) bool {
		first := a.send(ctx, req{label: label(round, checks.RoleFirst, "its answer dropped"), op: o, fault: faults.DropAck{}})
		if !hidden(first) {
			return false
		}
		tries := a.settle(ctx, req{label: label(round, checks.RoleRetry, ""), op: o}, time.Now(), 10*time.Millisecond, a.settleTries(10*time.Millisecond))
		return tries[len(tries)-1].Acked()
	})
	return 0
}

func probeC10(ctx context.Context, a *Auditor) time.Duration {
	cut := a.cut()
	retries, unmet, rounds := 0, 0, c10Rounds
	var keys []string
	for round := 1; round <= rounds && ctx.Err() == nil; round++ {
		o, err := a.newOp(ctx, "C10")
		if err != nil {
			return cut
		}
		start := time.Now()
		first := a.send(ctx, req{label: label(round, checks.RoleFirst, fmt.Sprintf("abandoned after %v", cut)), op: o, fault: faults.Timeout{After: cut}})
		if first.Outcome == history.OK {
			// Answered in time: no overlap to test. Unless the answer was
			// bad, try the round again, giving up at half this answer's
			// time.
			if first.Status < 500 && retries < c10Retries && took(first) > 0 {
				retries++
				round--
				cut = max(min(cut, took(first)/2), time.Millisecond)
			}
			continue
		}
		r := req{label: label(round, checks.RoleImmediate, ""), op: o, target: 1}
		tries := a.settle(ctx, r, start, max(cut/4, time.Millisecond), a.settleTries(2*time.Millisecond))
		if !checks.C10Overlapped(first, tries) && unmet < c10Unmet {
			unmet++
			rounds++
		}
		if last := tries[len(tries)-1]; !last.Acked() {
			continue
		}
		keys = append(keys, o.key)
		// The abandoned request may still finish: a replay after it shows
		// whether two executions took place.
		pause.For(ctx, 2*a.latency)
		a.send(ctx, req{label: label(round, checks.RoleLater, ""), op: o})
	}
	a.effects(ctx, "C10", keys...)
	return cut
}

func probeC11(ctx context.Context, a *Auditor) time.Duration {
	a.rounds(ctx, "C11", 2, func(round int, o op) bool {
		a.send(ctx, req{label: label(round, checks.RoleFirst, "reset before sending"), op: o, fault: faults.Reset{}})
		tries := a.settle(ctx, req{label: label(round, checks.RoleRetry, ""), op: o}, time.Now(), 10*time.Millisecond, 3)
		return tries[len(tries)-1].Acked()
	})
	return 0
}

func probeC12(ctx context.Context, a *Auditor) time.Duration {
	a.rounds(ctx, "C12", 2, func(round int, o op) bool {
		eb, err := a.errTmpl.Body(ctx, scenarios.Vars{Key: o.key, Seq: o.seq, Attempt: 1})
		if err == nil {
			eb, err = a.keyed(eb, o.key)
		}
		if err != nil {
			return false
		}
		failed := a.send(ctx, req{label: label(round, checks.RoleErrorBody, ""), op: o, body: eb})
		if failed.Outcome != history.OK || failed.Acked() {
			return false
		}
		// The normal body, again while it is not processed: a key refused
		// every time is burnt, one processed late was released late.
		gap := max(a.latency, 50*time.Millisecond)
		for try := 1; try <= c12Tries; try++ {
			e := a.send(ctx, req{label: label(round, checks.RoleNormal, ""), op: o})
			if e.Acked() || e.Outcome != history.OK || try == c12Tries || !pause.For(ctx, gap) {
				break
			}
			gap *= 3
		}
		return true
	})
	return 0
}

func probeC13(ctx context.Context, a *Auditor) time.Duration {
	cut := a.cut()
	retries := 0
	var keys []string
	for round := 1; round <= c13Rounds && ctx.Err() == nil; round++ {
		o, err := a.newOp(ctx, "C13")
		if err != nil {
			return cut
		}
		start := time.Now()
		first := a.send(ctx, req{label: label(round, checks.RoleFirst, fmt.Sprintf("with Cache-Control: no-cache, abandoned after %v", cut)), op: o,
			headers: noCache, fault: faults.Timeout{After: cut}})
		if first.Outcome == history.OK && first.Status >= 500 {
			continue
		}
		// The retries go even when the first was answered in time: a key
		// an answered request left in flight is stuck all the same.
		tries := a.settle(ctx, req{label: label(round, checks.RoleRetry, ""), op: o}, start, 20*time.Millisecond, a.settleTries(20*time.Millisecond))
		last := tries[len(tries)-1]
		if last.Acked() {
			keys = append(keys, o.key)
		}
		if busy(last) {
			break // each round stuck in flight waits out the lease
		}
		if first.Outcome == history.OK && retries < c10Retries && took(first) > 0 {
			// Answered before the client gave up: nothing was left in
			// flight. One more round, giving up at half this answer's
			// time, as C10 does.
			retries++
			round--
			cut = max(min(cut, took(first)/2), time.Millisecond)
		}
	}
	a.effects(ctx, "C13", keys...)
	return cut
}

func probeC14(ctx context.Context, a *Auditor) time.Duration {
	ret := a.cfg.Retention
	o, err := a.newOp(ctx, "C14")
	if err != nil {
		return 0
	}
	first := a.send(ctx, req{label: label(0, checks.RoleFirst, ""), op: o})
	if !first.Acked() {
		return 0
	}
	at := time.Now()
	pause.For(ctx, time.Until(at.Add(ret*3/4)))
	a.send(ctx, req{label: label(0, checks.RoleWithin, fmt.Sprintf("at %v (3/4 of the retention)", (ret*3/4).Round(time.Millisecond))), op: o})
	past := ret + max(ret/4, 250*time.Millisecond)
	pause.For(ctx, time.Until(at.Add(past)))
	// Concurrent copies just past the retention: one may execute anew.
	rs := make([]req, c14Copies)
	for i := range rs {
		rs[i] = req{label: label(0, checks.RolePast, fmt.Sprintf("copy %d at %v", i+1, past.Round(time.Millisecond))), op: o, target: i}
	}
	a.together(ctx, rs)
	a.effects(ctx, "C14", o.key)
	return 0
}

func probeC15(ctx context.Context, a *Auditor) time.Duration {
	var keys []string
	for round := 1; round <= 2 && ctx.Err() == nil; round++ {
		o, err := a.newOp(ctx, "C15")
		if err != nil {
			return 0
		}
		if first := a.send(ctx, req{label: label(round, checks.RoleFirstUser, ""), op: o}); !first.Acked() {
			continue
		}
		a.send(ctx, req{label: label(round, checks.RoleSecondUser, "same key and body"), op: o, as: true})
		keys = append(keys, o.key)
	}
	if a.oracle != nil && len(keys) > 0 {
		// Whether the oracle sees the second principal's effects: a key of
		// its own, counted or not.
		o, err := a.newOp(ctx, "C15")
		if err != nil {
			return 0
		}
		a.send(ctx, req{label: label(0, checks.RoleOwnKey, ""), op: o, as: true})
		a.effects(ctx, "C15", append(keys, o.key)...)
	}
	return 0
}

func probeC16(ctx context.Context, a *Auditor) time.Duration {
	for round := 1; round <= 2 && ctx.Err() == nil; round++ {
		o, err := a.newOp(ctx, "C16")
		if err != nil {
			return 0
		}
		p, err := a.tmpl.Path(ctx, scenarios.Vars{Key: o.key, Seq: o.seq, Attempt: 1})
		if err != nil {
			return 0
		}
		if first := a.send(ctx, req{label: label(round, checks.RoleFirst, ""), op: o}); !first.Acked() {
			continue
		}
		a.send(ctx, req{label: label(round, checks.RoleQuery, ""), op: o, path: withQuery(p)})
		// Effects are read before the sibling path, whose own effects would
		// be counted under the same key.
		a.effects(ctx, "C16", o.key)
		a.send(ctx, req{label: label(round, checks.RoleSibling, ""), op: o, path: siblingPath(p)})
	}
	return 0
}

func probeC17(ctx context.Context, a *Auditor) time.Duration {
	a.rounds(ctx, "C17", 2, func(round int, o op) bool {
		if first := a.send(ctx, req{label: label(round, checks.RoleFirst, ""), op: o}); !first.Acked() {
			return false
		}
		return a.send(ctx, req{label: label(round, checks.RoleReplay, ""), op: o}).Acked()
	})
	return 0
}

func probeC18(ctx context.Context, a *Auditor) time.Duration {
	o, err := a.newOp(ctx, "C18")
	if err != nil {
		return 0
	}
	a.send(ctx, req{label: label(0, checks.RoleGetWithKey, ""), op: o, method: http.MethodGet})
	a.send(ctx, req{label: label(0, checks.RoleGetWithoutKey, ""), op: o, method: http.MethodGet, noKey: true})
	return 0
}

func probeDK(ctx context.Context, a *Auditor) time.Duration {
	var keys []string
	for round := 1; round <= 2 && ctx.Err() == nil; round++ {
		o, err := a.newOp(ctx, "DK")
		if err != nil {
			return 0
		}
		if first := a.send(ctx, req{label: label(round, checks.RoleFirstKey, ""), op: o}); !first.Acked() {
			continue
		}
		o2 := o
		o2.key = a.newKey()
		body := o.body
		if a.keyField != "" {
			if body, err = setField(o.body, a.keyField, o2.key); err != nil {
				return 0
			}
		}
		o2.body = body
		o2.id = a.record("DK", o2.key)
		if a.send(ctx, req{label: label(round, checks.RoleNewKey, ""), op: o2}).Acked() {
			keys = append(keys, o.key, o2.key)
		}
	}
	a.effects(ctx, "DK", keys...)
	return 0
}
