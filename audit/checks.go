package audit

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Rounds and copies of the repeated probes.
const (
	c06Rounds = 5
	c06Copies = 10
	c07Rounds = 3
	c07Copies = 4
	c08Rounds = 3
	c09Rounds = 3
	c10Rounds = 2
	// c10Retries are the rounds of C10 tried again, giving up sooner, when
	// the API answered before the client gave up: the calibration measured
	// a slow moment.
	c10Retries = 2
	c13Rounds  = 2
)

// noCache is the header C08's and C13's first attempts carry: a client
// forcing a fresh answer sends it, and a server that skips its handler
// for it must still not leave the key stuck.
var noCache = map[string]string{"Cache-Control": "no-cache"}

func fixed(n int) func(*Auditor) int { return func(*Auditor) int { return n } }

// needsJSON skips a check that varies the body when the body is not a
// JSON object.
func needsJSON(a *Auditor) string {
	o, err := a.newOpPreview()
	if err != nil || o == nil {
		return "the request has no JSON object body to vary"
	}
	if _, ok := members(o); !ok {
		return "the request has no JSON object body to vary"
	}
	return ""
}

// newOpPreview renders the body for a throwaway key, to see its shape.
func (a *Auditor) newOpPreview() ([]byte, error) {
	b, err := a.tmpl.Body(context.Background(), scenarios.Vars{Key: "00000000-0000-4000-8000-000000000000"})
	if err != nil {
		return nil, err
	}
	return a.keyed(b, "00000000-0000-4000-8000-000000000000")
}

// definitions are the checks in the order they run.
func definitions() []definition {
	return []definition{
		{id: "C01", name: "missing-key", severity: Medium, requests: fixed(1), run: runC01,
			probes: "the request without a key: the profile's answer (draft 400), nothing processed unless the profile processes it"},
		{id: "C02", name: "key-format", severity: High, run: runC02,
			requests: func(a *Auditor) int {
				if a.keyHdr != "" {
					return 6
				}
				return 4
			},
			probes: `an empty key, 300- and 500-character keys, a tab inside a key: 4xx, never 5xx; "quoted" and raw forms of one key: one key under draft`},
		{id: "C03", name: "sequential-replay", severity: Critical, requests: fixed(4), run: runC03,
			probes: "2 keys, each sent twice one after the other: the retry is answered like the first (2xx, same resource), one effect"},
		{id: "C04", name: "payload-mismatch", severity: Critical, requests: fixed(4), needs: needsJSON, run: runC04,
			probes: "2 keys, each sent again with one body value changed: the profile's mismatch code (draft 422), never a second effect or a silent replay"},
		{id: "C05", name: "equivalent-body", severity: Medium, requests: fixed(6), needs: needsJSON, run: runC05,
			probes: "2 keys, each sent again as the same JSON with its fields reordered, and re-spaced: the same request (a replay)"},
		{id: "C06", name: "concurrent-same-key", severity: Critical, requests: fixed(c06Rounds * c06Copies), run: runC06,
			probes: fmt.Sprintf("%d rounds of %d identical copies released together by a barrier: one execution, the others 409 or a replay, no 5xx, no hang", c06Rounds, c06Copies)},
		{id: "C07", name: "concurrent-mismatch", severity: Critical, requests: fixed(c07Rounds * c07Copies), needs: needsJSON, run: runC07,
			probes: fmt.Sprintf("%d rounds of %d copies with different bodies under one key, released together: at most one executed, the others 409 or the mismatch code", c07Rounds, c07Copies)},
		{id: "C08", name: "409-is-retryable", severity: High, run: runC08,
			requests: func(a *Auditor) int { return c08Rounds * (1 + a.settleTries(20*time.Millisecond)) },
			probes:   "a request (with Cache-Control: no-cache) and a copy while it is in flight; the copy's 409 retried unchanged: the first answer replayed within the lease, never 409 forever"},
		{id: "C09", name: "dropped-ack", severity: Critical, run: runC09,
			requests: func(a *Auditor) int { return c09Rounds * (1 + a.settleTries(10*time.Millisecond)) },
			probes:   fmt.Sprintf("%d keys whose first answer is dropped after the server sent it, then retried: the hidden answer replayed, one effect", c09Rounds)},
		{id: "C10", name: "timeout-in-flight", severity: Critical, run: runC10,
			requests: func(a *Auditor) int { return c10Rounds*(2+a.settleTries(2*time.Millisecond)) + c10Retries },
			probes:   fmt.Sprintf("%d keys whose first request the client gives up on at half the request's time (sooner, when it answered first), retried at once: 409 while in flight, then the replay; one effect", c10Rounds)},
		{id: "C11", name: "reset-before-send", severity: Critical, requests: fixed(2 * 4), run: runC11,
			probes: "2 keys whose first attempt fails before a byte is written, then retried: processed once"},
		{id: "C12", name: "error-caching", severity: Critical, requests: fixed(4), run: runC12,
			needs: func(a *Auditor) string {
				if a.errTmpl == nil {
					return "give --error-data, a body the API fails on (a declined card), to test what an error leaves behind"
				}
				return ""
			},
			probes: "2 keys sent first with --error-data (an error), then with the normal body: the declared --errors policy (cached: the error again; re-executed: processed), never an effect of the error"},
		{id: "C13", name: "stuck-in-flight", severity: High, run: runC13,
			requests: func(a *Auditor) int { return c13Rounds * (1 + a.settleTries(20*time.Millisecond)) },
			probes:   "a request (with Cache-Control: no-cache) the client abandons mid-flight, then retries: a replay (or the key usable again) within the lease, never 409 past it"},
		{id: "C14", name: "expiry", severity: Critical, requests: fixed(3), run: runC14,
			needs: func(a *Auditor) string {
				switch {
				case a.cfg.Retention == 0:
					return "give --retention (how long the API keeps keys) to test expiry"
				case a.cfg.Retention > MaxRetention:
					return fmt.Sprintf("retention %v is too long to wait out (at most %v)", a.cfg.Retention, MaxRetention)
				}
				return ""
			},
			probes: "a key replayed at 3/4 of --retention (a replay) and again past it (a new execution)"},
		{id: "C15", name: "cross-user", severity: Critical, requests: fixed(4), run: runC15,
			needs: func(a *Auditor) string {
				if len(a.as) == 0 {
					return "give --as with a second principal's credentials to test keys across users"
				}
				return ""
			},
			probes: "2 keys each sent by the first principal, then by the second (--as): processed for each, the second never gets the first's answer"},
		{id: "C16", name: "cross-endpoint", severity: Critical, requests: fixed(6), run: runC16,
			probes: "2 keys sent, then again with a query string added (the same operation: a replay or a rejection), then to a sibling path (another operation: never the first path's answer)"},
		{id: "C17", name: "replay-fidelity", severity: Critical, requests: fixed(4), run: runC17,
			probes: "2 keys sent twice: the replay's status, body (minus --volatile), Content-Type and Location equal the first answer's; the profile's replay marker"},
		{id: "C18", name: "safe-method", severity: High, requests: fixed(2), run: runC18,
			probes: "GET on the path with a key and without: the key is ignored (the same status)"},
		{id: "DK", name: "distinct-keys", severity: High, requests: fixed(4), run: runDK,
			probes: "2 rounds of one body sent under two fresh keys: two operations (dedup is by key, not by content)"},
	}
}

// label names a request within a round.
func label(round int, what string) string { return fmt.Sprintf("round %d: %s", round, what) }

func runC01(ctx context.Context, a *Auditor, c *checkRun) {
	o, err := a.newOp(ctx)
	if err != nil {
		c.unknown("%v", err)
		return
	}
	e := a.send(ctx, req{label: "without a key", op: o, noKey: true})
	c.show(e)
	if c.bad(e, "the request without a key") {
		return
	}
	want := a.profile.MissingKey
	processes := scenarios.StatusIn(want, http.StatusOK)
	switch {
	case scenarios.StatusIn(want, e.status):
		c.pass = fmt.Sprintf("without a key: %d, as the %s profile expects", e.status, a.profile.Name)
	case processes && e.status >= 400 && e.status < 500:
		c.pass = fmt.Sprintf("without a key: %d, stricter than the %s profile (which processes it without dedup)", e.status, a.profile.Name)
	case e.ok():
		c.fail(Medium, "the request without a key was processed (%d): its retries cannot be deduplicated; the %s profile expects %s", e.status, a.profile.Name, strings.Join(want, " or "))
	default:
		c.fail(Medium, "the request without a key was answered %d; the %s profile expects %s", e.status, a.profile.Name, strings.Join(want, " or "))
	}
}

func runC02(ctx context.Context, a *Auditor, c *checkRun) {
	k := a.newKey()
	shapes := []struct {
		what, key string
		// mayAccept: a key that is not invalid everywhere (no length limit).
		mayAccept bool
	}{
		{"an empty key", "", false},
		{"a 300-character key", a.randHex(300), true},
		{"a 500-character key", a.randHex(500), true},
		{"a key with a tab inside", k[:18] + "\t" + k[18:], false},
	}
	var accepted []string
	for _, s := range shapes {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		key := s.key
		r := req{label: s.what, op: o, key: &key}
		if a.keyField != "" {
			b, err := setField(o.body, a.keyField, key)
			if err != nil {
				c.unknown("%v", err)
				return
			}
			r.body = b
		}
		e := a.send(ctx, r)
		c.show(e)
		switch {
		case c.bad(e, s.what):
		case e.status >= 400 && e.status < 500:
		case e.ok() && s.mayAccept:
			accepted = append(accepted, s.what)
		case e.ok():
			c.fail(Medium, "%s was accepted (%d): an invalid key must be rejected with 400", s.what, e.status)
		default:
			c.fail(Medium, "%s was answered %d, want 400", s.what, e.status)
		}
	}
	c.pass = "invalid keys rejected with 4xx, never 5xx"
	if len(accepted) > 0 {
		c.note("%s accepted (no length limit)", strings.Join(accepted, " and "))
	}
	if a.keyHdr == "" {
		return
	}
	// The quoted (structured-field string) and raw forms of one key.
	o, err := a.newOp(ctx)
	if err != nil {
		c.unknown("%v", err)
		return
	}
	quoted := `"` + o.key + `"`
	q := a.send(ctx, req{label: "the key in its quoted form", op: o, key: &quoted})
	raw := a.send(ctx, req{label: "the same key raw", op: o})
	c.show(q, raw)
	if c.bad(q, "the quoted key") || c.bad(raw, "the raw key") {
		return
	}
	same := raw.ok() && (a.identity(raw) == a.identity(q) || strings.EqualFold(raw.header.Get("Idempotent-Replayed"), "true"))
	if n := c.count(ctx, o.key); n != nil && q.ok() && raw.ok() {
		same = n[o.key] == 1 // one effect: one key, whatever the replay's body
	}
	switch {
	case !q.ok():
		c.note("the quoted form is rejected (%d)", q.status)
	case same:
		c.note("the quoted and raw forms name one key")
	case raw.ok() && a.profile.Name == scenarios.ProfileDraft:
		c.fail(Medium, `the quoted form "K" and the raw form K of one key are two keys (two resources): under the draft the key is a structured-field string`)
	case raw.ok():
		c.note("the quoted and raw forms are two keys (opaque keys)")
	default:
		c.note("the raw form after the quoted one was answered %d", raw.status)
	}
}

func runC03(ctx context.Context, a *Auditor, c *checkRun) {
	var keys []string
	for round := 1; round <= 2; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		first := a.send(ctx, req{label: label(round, "first"), op: o})
		if !c.first(first, "the first request") {
			continue
		}
		replay := a.send(ctx, req{label: label(round, "identical retry"), op: o})
		c.show(replay)
		switch {
		case c.bad(replay, "an identical retry"):
		case replay.ok():
			keys = append(keys, o.key)
			if a.identity(replay) != a.identity(first) {
				c.twice(o.key, High, "the identical retry names another resource (%s, first %s)", a.identity(replay), a.identity(first))
			}
		default:
			keys = append(keys, o.key)
			c.fail(High, "an identical retry after the first answer (%d) was answered %d", first.status, replay.status)
		}
	}
	if c.once(ctx, keys...) {
		c.pass = "2 keys each sent twice: the retry got the first answer; 1 effect per key"
	} else {
		c.pass = "2 keys each sent twice: the retry got the first answer, the same resource (judged from the answers alone)"
	}
}

func runC04(ctx context.Context, a *Auditor, c *checkRun) {
	var keys []string
	for round := 1; round <= 2; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		other, _ := mutate(o.body, a.keyField, round)
		first := a.send(ctx, req{label: label(round, "first"), op: o})
		if !c.first(first, "the first request") {
			continue
		}
		e := a.send(ctx, req{label: label(round, "same key, another body"), op: o, body: other})
		c.show(e)
		keys = append(keys, o.key)
		switch {
		case c.bad(e, "another body under a used key"):
		case scenarios.StatusIn(a.profile.Mismatch, e.status):
		case e.ok() && a.replayOf(e, first):
			c.fail(Medium, "another body under a used key was answered %d with the first answer (a silent replay); the %s profile expects %s", e.status, a.profile.Name, strings.Join(a.profile.Mismatch, " or "))
		case e.ok() && a.identity(e) != a.identity(first):
			c.twice(o.key, Medium, "another body under a used key was answered %d naming another resource (%s, first %s)", e.status, a.identity(e), a.identity(first))
		case e.ok():
			c.ambiguous(o.key, Medium, "another body under a used key was answered %d about the same resource (%s) with another body", e.status, a.identity(e))
		default:
			c.fail(Medium, "another body under a used key was answered %d; the %s profile expects %s", e.status, a.profile.Name, strings.Join(a.profile.Mismatch, " or "))
		}
	}
	if n := c.count(ctx, keys...); n != nil {
		for _, k := range keys {
			if n[k] >= 2 {
				c.fail(Critical, "key %s has %d effects after another body was sent under it", k, n[k])
			}
		}
		c.pass = fmt.Sprintf("another body under a used key: %s, 1 effect per key", strings.Join(a.profile.Mismatch, " or "))
		return
	}
	c.pass = fmt.Sprintf("another body under a used key: %s (judged from the answers alone)", strings.Join(a.profile.Mismatch, " or "))
}

func runC05(ctx context.Context, a *Auditor, c *checkRun) {
	var keys []string
	tried := 0
	for round := 1; round <= 2; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		reordered, respaced := equivalents(o.body)
		first := a.send(ctx, req{label: label(round, "first"), op: o})
		if !c.first(first, "the first request") {
			continue
		}
		keys = append(keys, o.key)
		for _, v := range []struct {
			what string
			body []byte
		}{{"the same JSON, fields reordered", reordered}, {"the same JSON, re-spaced", respaced}} {
			if v.body == nil {
				continue
			}
			tried++
			e := a.send(ctx, req{label: label(round, v.what), op: o, body: v.body})
			c.show(e)
			switch {
			case c.bad(e, v.what):
			case e.ok() && a.identity(e) == a.identity(first):
			case e.ok():
				c.twice(o.key, High, "%s names another resource (%s, first %s)", v.what, a.identity(e), a.identity(first))
			default:
				c.fail(Medium, "%s under its key was answered %d: the payload fingerprint hashes the raw bytes, not the JSON", v.what, e.status)
			}
		}
	}
	if tried == 0 {
		c.skip = "the body has no other equivalent form"
		return
	}
	if c.once(ctx, keys...) {
		c.pass = "the same JSON reordered or re-spaced got the replay; 1 effect per key"
	} else {
		c.pass = "the same JSON reordered or re-spaced got the replay (judged from the answers alone)"
	}
}

// rejectedOK reports whether a status is a right answer to a concurrent
// copy that lost: the profile's in-flight or mismatch codes, or 409.
func (a *Auditor) rejectedOK(status int, mismatch bool) bool {
	if status == http.StatusConflict || scenarios.StatusIn(a.profile.InFlight, status) {
		return true
	}
	return mismatch && scenarios.StatusIn(a.profile.Mismatch, status)
}

func runC06(ctx context.Context, a *Auditor, c *checkRun) {
	var keys []string
	multi := map[string]int{} // key → resources its 2xx answers named, when more than one
	most, undecided := 0, 0
	var showRound []*exchange
	for round := 1; round <= c06Rounds; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		rs := make([]req, c06Copies)
		for i := range rs {
			rs[i] = req{label: label(round, fmt.Sprintf("copy %d", i+1)), op: o, target: i}
		}
		exs := a.together(ctx, rs)
		ids := map[string]bool{}
		bad := false
		for _, e := range exs {
			switch {
			case e.is5xx() || e.hung() || e.err != nil:
				bad = c.bad(e, fmt.Sprintf("round %d: a concurrent copy", round)) || bad
			case e.ok():
				ids[a.identity(e)] = true
			case !a.rejectedOK(e.status, false):
				bad = true
				c.fail(Medium, "round %d: a concurrent identical copy was answered %d; the %s profile expects %s in flight", round, e.status, a.profile.Name, strings.Join(a.profile.InFlight, " or "))
			}
		}
		switch {
		case len(ids) == 0:
			undecided++
		case len(ids) > 1:
			multi[o.key] = len(ids)
			most = max(most, len(ids))
			bad = true
			fallthrough
		default:
			keys = append(keys, o.key)
		}
		if bad && (showRound == nil || len(multi) == 1 && multi[o.key] > 1) || round == 1 && showRound == nil {
			showRound = exs
		}
	}
	c.show(showRound...)
	if undecided > 0 {
		c.unknown("%d of %d rounds had no 2xx answer", undecided, c06Rounds)
	}
	n := c.count(ctx, keys...)
	if n == nil {
		if len(multi) > 0 {
			c.fail(Critical, "%d rounds of %d concurrent copies: %d rounds got 2xx answers naming up to %d different resources: executed more than once (judged from the answers alone)",
				c06Rounds, c06Copies, len(multi), most)
		}
		c.pass = fmt.Sprintf("%d rounds of %d concurrent copies: one resource per round, the other copies 409 or a replay (judged from the answers alone)", c06Rounds, c06Copies)
		return
	}
	twice, top, replays := 0, 0, 0
	for _, k := range keys {
		switch e := n[k]; {
		case e >= 2:
			twice++
			top = max(top, e)
		case e == 0:
			c.fail(High, "key %s was answered 2xx but has no effect", k)
		case multi[k] > 1:
			replays++
		}
	}
	if twice > 0 {
		c.fail(Critical, "%d rounds of %d concurrent copies: %d rounds charged twice or more (up to %d effects)", c06Rounds, c06Copies, twice, top)
	}
	if replays > 0 {
		c.fail(High, "%d rounds of %d concurrent copies: %d rounds answered copies naming different resources, with 1 effect: replays that name another resource", c06Rounds, c06Copies, replays)
	}
	c.pass = fmt.Sprintf("%d rounds of %d concurrent copies: 1 effect each, the other copies 409 or a replay", c06Rounds, c06Copies)
}

func runC07(ctx context.Context, a *Auditor, c *checkRun) {
	var keys []string
	var showRound []*exchange
	for round := 1; round <= c07Rounds; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		rs := make([]req, c07Copies)
		for i := range rs {
			b := o.body
			if i > 0 {
				b, _ = mutate(o.body, a.keyField, i)
			}
			rs[i] = req{label: label(round, fmt.Sprintf("body %d", i+1)), op: o, body: b, target: i}
		}
		exs := a.together(ctx, rs)
		ids := map[string]int{}
		var oks []*exchange
		bad := false
		for _, e := range exs {
			switch {
			case e.is5xx() || e.hung() || e.err != nil:
				bad = c.bad(e, fmt.Sprintf("round %d: a concurrent copy", round)) || bad
			case e.ok():
				ids[a.identity(e)]++
				oks = append(oks, e)
			case !a.rejectedOK(e.status, true):
				bad = true
				c.fail(Medium, "round %d: a concurrent copy with another body was answered %d; the %s profile expects %s or %s", round, e.status, a.profile.Name,
					strings.Join(a.profile.InFlight, " or "), strings.Join(a.profile.Mismatch, " or "))
			}
		}
		switch {
		case len(ids) > 1:
			bad = true
			c.fail(Critical, "round %d: %d different bodies under one key were each processed (%d resources)", round, len(ids), len(ids))
		case len(oks) > 1:
			keys = append(keys, o.key)
			bad = true
			if a.replayOf(oks[1], oks[0]) {
				c.fail(Medium, "round %d: a copy with another body got the winner's answer (a silent replay)", round)
			} else {
				c.ambiguous(o.key, Medium, "round %d: copies with different bodies were answered 2xx about the same resource (%s) with different bodies", round, a.identity(oks[0]))
			}
		case len(oks) == 1:
			keys = append(keys, o.key)
		}
		if bad && showRound == nil || round == 1 && showRound == nil {
			showRound = exs
		}
	}
	c.show(showRound...)
	if n := c.count(ctx, keys...); n != nil {
		for _, k := range keys {
			if n[k] >= 2 {
				c.fail(Critical, "key %s has %d effects after concurrent different bodies", k, n[k])
			}
		}
		c.pass = fmt.Sprintf("%d rounds of %d different bodies under one key: at most 1 effect, the others refused", c07Rounds, c07Copies)
		return
	}
	c.pass = fmt.Sprintf("%d rounds of %d different bodies under one key: one processed, the others refused (judged from the answers alone)", c07Rounds, c07Copies)
}

func runC08(ctx context.Context, a *Auditor, c *checkRun) {
	gap := min(max(a.latency/4, time.Millisecond), 50*time.Millisecond)
	informative := 0
	var keys []string
	for round := 1; round <= c08Rounds && informative < 2; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		done := make(chan *exchange, 1)
		go func() {
			done <- a.send(ctx, req{label: label(round, "first (Cache-Control: no-cache)"), op: o, headers: noCache})
		}()
		if !sleep(ctx, gap) {
			return
		}
		copyReq := req{label: label(round, "copy while in flight"), op: o, target: 1}
		cp := a.send(ctx, copyReq)
		first := <-done
		if c.bad(first, "the first request") || c.bad(cp, "the copy") {
			continue
		}
		if !cp.inFlight() {
			continue // finished before the copy came: nothing to retry
		}
		informative++
		copyReq.label = label(round, "the copy retried unchanged")
		tries := a.settle(ctx, copyReq, time.Now(), 20*time.Millisecond, a.settleTries(20*time.Millisecond)-1)
		last := cp
		if len(tries) > 0 {
			last = tries[len(tries)-1]
		}
		c.show(first, cp, last)
		keys = append(keys, o.key)
		switch {
		case c.bad(last, "a retry after 409"):
		case last.inFlight():
			c.fail(High, "the copy got %d for %v of retries after the first request was answered %d: the key is stuck", last.status, a.lease, first.status)
		case last.ok() && first.ok() && a.identity(last) != a.identity(first):
			c.twice(o.key, High, "the retried copy names another resource (%s, first %s)", a.identity(last), a.identity(first))
		case !last.ok():
			c.fail(High, "the copy retried unchanged after 409 was answered %d", last.status)
		}
		if len(c.findings) > 0 {
			break // a failing round may have waited out the lease
		}
	}
	if informative == 0 {
		c.skip = fmt.Sprintf("no copy was answered 409 in %d rounds: the first request finished before its copy arrived", c08Rounds)
		return
	}
	if n := c.count(ctx, keys...); n != nil {
		for _, k := range keys {
			if n[k] >= 2 {
				c.fail(Critical, "key %s has %d effects", k, n[k])
			}
		}
	}
	c.pass = fmt.Sprintf("%d copies answered 409 while the first was in flight; retried unchanged, each got the first answer", informative)
}

func runC09(ctx context.Context, a *Auditor, c *checkRun) {
	var keys []string
	informative := 0
	for round := 1; round <= c09Rounds; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		first := a.send(ctx, req{label: label(round, "first, its answer dropped"), op: o, fault: faults.DropAck{}})
		c.show(first)
		hidden := first.hidden
		if hidden == nil {
			if first.err == nil || !first.hung() {
				c.bad(first, "the first request")
			}
			continue
		}
		r := req{label: label(round, "retry"), op: o}
		tries := a.settle(ctx, r, time.Now(), 10*time.Millisecond, a.settleTries(10*time.Millisecond))
		last := tries[len(tries)-1]
		c.show(last)
		switch {
		case c.bad(last, "the retry after a dropped answer"):
		case last.inFlight():
			c.fail(High, "the retry after a dropped answer got %d for %v: the key is stuck", last.status, a.lease)
		case !hidden.ok():
			c.note("round %d: the dropped answer was %d", round, hidden.status)
		case !last.ok():
			c.fail(High, "the retry after a dropped %d was answered %d", hidden.status, last.status)
		case a.identity(last) != a.identity(hidden):
			informative++
			keys = append(keys, o.key)
			c.twice(o.key, High, "the retry after a dropped answer names another resource (%s, dropped %s)", a.identity(last), a.identity(hidden))
		default:
			informative++
			keys = append(keys, o.key)
		}
	}
	if c.once(ctx, keys...) {
		c.pass = fmt.Sprintf("%d answers dropped after the server sent them: each retry got the hidden answer; 1 effect per key", informative)
	} else {
		c.pass = fmt.Sprintf("%d answers dropped after the server sent them: each retry got the hidden answer, the same resource (judged from the answers alone)", informative)
	}
}

func runC10(ctx context.Context, a *Auditor, c *checkRun) {
	cut := a.cut()
	var keys []string
	informative, retries := 0, 0
	for round := 1; round <= c10Rounds; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		start := time.Now()
		first := a.send(ctx, req{label: label(round, fmt.Sprintf("first, abandoned after %v", cut)), op: o, fault: faults.Timeout{After: cut}})
		c.show(first)
		if first.answered() || first.err == nil {
			// Answered in time: no overlap to test. Unless the answer was
			// bad, try the round again, giving up at half this answer's
			// time.
			if !c.bad(first, "the first request") && retries < c10Retries && first.took > 0 {
				retries++
				round--
				cut = max(min(cut, first.took/2), time.Millisecond)
			}
			continue
		}
		informative++
		r := req{label: label(round, "immediate retry"), op: o, target: 1}
		tries := a.settle(ctx, r, start, max(cut/4, time.Millisecond), a.settleTries(2*time.Millisecond))
		last := tries[len(tries)-1]
		c.show(tries[0], last)
		switch {
		case c.bad(last, "the retry of an abandoned request"):
			continue
		case last.inFlight():
			c.fail(High, "the retry of an abandoned request got %d for %v: the key is stuck", last.status, a.lease)
			continue
		case !last.ok():
			c.fail(High, "the retry of an abandoned request was answered %d", last.status)
			continue
		}
		keys = append(keys, o.key)
		// The abandoned request may still finish: a replay after it shows
		// whether two executions took place.
		sleep(ctx, 2*a.latency)
		later := a.send(ctx, req{label: label(round, "replay after both finished"), op: o})
		c.show(later)
		switch {
		case c.bad(later, "the replay"):
		case later.ok() && a.identity(later) != a.identity(last):
			c.twice(o.key, High, "the key answered two resources (%s, then %s) after a request abandoned mid-flight", a.identity(last), a.identity(later))
		}
	}
	if informative == 0 {
		c.skip = fmt.Sprintf("the API answered within %v, before the client could give up: no overlap to test", cut)
		return
	}
	if c.once(ctx, keys...) {
		c.pass = fmt.Sprintf("%d requests abandoned mid-flight and retried at once: 409 while in flight, then the replay; 1 effect per key", informative)
		return
	}
	if len(c.findings) == 0 && len(keys) > 0 {
		c.unknown("the abandoned request's answer was lost: without --effects the answers cannot tell whether it executed as well as its retry")
	}
}

func runC11(ctx context.Context, a *Auditor, c *checkRun) {
	var keys []string
	for round := 1; round <= 2; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		first := a.send(ctx, req{label: label(round, "first, reset before sending"), op: o, fault: faults.Reset{}})
		tries := a.settle(ctx, req{label: label(round, "retry"), op: o}, time.Now(), 10*time.Millisecond, 3)
		last := tries[len(tries)-1]
		c.show(first, last)
		switch {
		case c.bad(last, "the retry after a reset"):
		case !last.ok():
			c.fail(High, "the retry of a request that never left the client was answered %d", last.status)
		default:
			keys = append(keys, o.key)
		}
	}
	if c.once(ctx, keys...) {
		c.pass = "2 requests reset before sending, then retried: processed once each; 1 effect per key"
	} else {
		c.pass = "2 requests reset before sending, then retried: each retry processed (the reset attempt never left the client; judged from the answers alone)"
	}
}

func runC12(ctx context.Context, a *Auditor, c *checkRun) {
	var policy []string
	var keys []string
	for round := 1; round <= 2; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		eb, err := a.errTmpl.Body(ctx, scenarios.Vars{Key: o.key, Seq: o.seq, Attempt: 1})
		if err == nil {
			eb, err = a.keyed(eb, o.key)
		}
		if err != nil {
			c.unknown("%v", err)
			return
		}
		failed := a.send(ctx, req{label: label(round, "the error body (--error-data)"), op: o, body: eb})
		c.show(failed)
		if failed.err != nil {
			c.bad(failed, "the error body")
			continue
		}
		if failed.ok() {
			c.skip = fmt.Sprintf("--error-data was answered %d: it must be a body the API fails on", failed.status)
			return
		}
		retry := a.send(ctx, req{label: label(round, "the normal body under the same key"), op: o})
		c.show(retry)
		keys = append(keys, o.key)
		if retry.err != nil {
			c.bad(retry, "the retry after an error")
			continue
		}
		seen := ErrorsCached
		if retry.ok() {
			seen = ErrorsReExecuted
		}
		policy = append(policy, seen)
		switch {
		case retry.is5xx() && !failed.is5xx():
			c.fail(High, "after a %d, the retry under the same key was answered %d", failed.status, retry.status)
		case a.cfg.Errors == ErrorsReExecuted && !retry.ok():
			c.fail(Medium, "after a %d the key stays failed (the retry with the normal body was answered %d): the error was kept, but --errors re-executed says an error releases the key", failed.status, retry.status)
		case a.cfg.Errors == ErrorsCached && retry.ok():
			c.fail(Medium, "after a %d the key was executed again (%d): --errors cached says the error is kept under the key", failed.status, retry.status)
		}
	}
	if n := c.count(ctx, keys...); n != nil {
		for _, k := range keys {
			if n[k] >= 2 {
				c.fail(Critical, "key %s has %d effects: the failed attempt left one, and the retry another", k, n[k])
			}
		}
	}
	if len(policy) == 0 {
		return
	}
	seen := policy[0]
	switch a.cfg.Errors {
	case "":
		c.pass = fmt.Sprintf("errors are %s (no policy declared: give --errors to judge it)", seen)
	default:
		c.pass = fmt.Sprintf("errors are %s, as declared", seen)
	}
}

func runC13(ctx context.Context, a *Auditor, c *checkRun) {
	cut := a.cut()
	var keys []string
	for round := 1; round <= c13Rounds; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		start := time.Now()
		first := a.send(ctx, req{label: label(round, fmt.Sprintf("first (Cache-Control: no-cache), abandoned after %v", cut)), op: o,
			headers: noCache, fault: faults.Timeout{After: cut}})
		c.show(first)
		if first.answered() && c.bad(first, "the first request") {
			continue
		}
		tries := a.settle(ctx, req{label: label(round, "retry"), op: o}, start, 20*time.Millisecond, a.settleTries(20*time.Millisecond))
		last := tries[len(tries)-1]
		c.show(last)
		switch {
		case c.bad(last, "the retry"):
		case last.inFlight():
			c.fail(High, "the key still answered %d %v after its client went away (the lease): it is stuck in flight", last.status, time.Since(start).Round(100*time.Millisecond))
		case !last.ok():
			c.fail(High, "the retry after the client went away was answered %d", last.status)
		case first.ok() && a.identity(first) != a.identity(last):
			keys = append(keys, o.key)
			c.twice(o.key, High, "the retry names another resource (%s, first %s)", a.identity(last), a.identity(first))
		default:
			keys = append(keys, o.key)
		}
		if len(c.findings) > 0 {
			break // each failing round waits out the lease
		}
	}
	if n := c.count(ctx, keys...); n != nil {
		for _, k := range keys {
			if n[k] >= 2 {
				c.fail(Critical, "key %s has %d effects", k, n[k])
			}
		}
	}
	c.pass = fmt.Sprintf("requests abandoned mid-flight: the retries got the answer within the lease (%v)", a.lease)
}

func runC14(ctx context.Context, a *Auditor, c *checkRun) {
	ret := a.cfg.Retention
	o, err := a.newOp(ctx)
	if err != nil {
		c.unknown("%v", err)
		return
	}
	first := a.send(ctx, req{label: "first", op: o})
	if !c.first(first, "the first request") {
		return
	}
	at := first.start.Add(first.took)
	sleep(ctx, time.Until(at.Add(ret*3/4)))
	before := a.send(ctx, req{label: fmt.Sprintf("replay at %v (3/4 of the retention)", (ret * 3 / 4).Round(time.Millisecond)), op: o})
	c.show(before)
	switch {
	case c.bad(before, "the replay within the retention"):
		return
	case before.ok() && a.identity(before) != a.identity(first):
		c.twice(o.key, High, "within the declared retention (%v) the key answered another resource (%s, first %s)", ret, a.identity(before), a.identity(first))
	case !before.ok():
		c.fail(High, "within the declared retention (%v) the replay was answered %d", ret, before.status)
	}
	past := ret + max(ret/4, 250*time.Millisecond)
	sleep(ctx, time.Until(at.Add(past)))
	after := a.send(ctx, req{label: fmt.Sprintf("replay at %v (past the retention)", past.Round(time.Millisecond)), op: o})
	c.show(after)
	switch {
	case c.bad(after, "the replay past the retention"):
	case after.ok() && a.identity(after) == a.identity(first):
		c.fail(Info, "past the declared retention (%v) the key is still replayed: keys outlive what the API declares", ret)
	case !after.ok():
		c.fail(Info, "past the declared retention (%v) the key was answered %d, not processed as new", ret, after.status)
	}
	c.count(ctx, o.key)
	c.pass = fmt.Sprintf("replayed within the retention (%v), processed as new past it", ret)
}

func runC15(ctx context.Context, a *Auditor, c *checkRun) {
	for round := 1; round <= 2; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		first := a.send(ctx, req{label: label(round, "the first principal"), op: o})
		if !c.first(first, "the first principal's request") {
			continue
		}
		other := a.send(ctx, req{label: label(round, "the second principal (--as), same key and body"), op: o, as: true})
		c.show(other)
		switch {
		case c.bad(other, "the second principal's request"):
		case other.status == http.StatusUnauthorized || other.status == http.StatusForbidden:
			c.unknown("the second principal was refused (%d): check --as", other.status)
		case other.ok() && a.replayOf(other, first):
			c.fail(Critical, "the second principal received the first principal's answer (%s) for the same key: a data leak, and its own request was never processed", a.identity(first))
		case other.ok():
		default:
			c.fail(Medium, "the second principal's request with the first's key was answered %d: keys are not scoped per user (nothing leaked)", other.status)
		}
	}
	c.pass = "the same key from two principals: each processed on its own, nothing of the first's answer to the second"
}

func runC16(ctx context.Context, a *Auditor, c *checkRun) {
	for round := 1; round <= 2; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		p, err := a.tmpl.Path(ctx, scenarios.Vars{Key: o.key, Seq: o.seq, Attempt: 1})
		if err != nil {
			c.unknown("%v", err)
			return
		}
		first := a.send(ctx, req{label: label(round, "first"), op: o})
		if !c.first(first, "the first request") {
			continue
		}
		q := a.send(ctx, req{label: label(round, "same key, a query string added"), op: o, path: withQuery(p)})
		c.show(q)
		switch {
		case c.bad(q, "the request with a query string added"):
		case q.ok() && a.identity(q) != a.identity(first):
			c.twice(o.key, High, "the same request with a query string added names another resource (%s, first %s)", a.identity(q), a.identity(first))
		default: // replayed or refused: the same operation
		}
		// Effects are read before the sibling path, whose own effects would
		// be counted under the same key.
		if n := c.count(ctx, o.key); n != nil && n[o.key] >= 2 {
			c.fail(Critical, "key %s has %d effects after the same request with a query string added", o.key, n[o.key])
		}
		sib := a.send(ctx, req{label: label(round, "same key, a sibling path"), op: o, path: siblingPath(p)})
		c.show(sib)
		switch {
		case sib.is5xx() || sib.err != nil:
			c.note("the sibling path was answered %s", sib.what())
		case sib.ok() && (a.identity(sib) == a.identity(first) && a.sameBody(sib, first)):
			c.fail(High, "the sibling path %s replayed the first path's answer for the same key: keys are not scoped per endpoint", siblingPath(p))
		}
	}
	c.pass = "with a query string added: the replay (one operation); on a sibling path: not the first path's answer"
}

func runC17(ctx context.Context, a *Auditor, c *checkRun) {
	compared := 0
	var keys []string
	for round := 1; round <= 2; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		first := a.send(ctx, req{label: label(round, "first"), op: o})
		if !c.first(first, "the first request") {
			continue
		}
		replay := a.send(ctx, req{label: label(round, "replay"), op: o})
		c.show(replay)
		if c.bad(replay, "the replay") {
			continue
		}
		if !replay.ok() {
			c.note("round %d: the replay was answered %d (see C03)", round, replay.status)
			continue
		}
		compared++
		if replay.status != first.status {
			c.fail(Info, "the replay's status is %d, the first answer's %d", replay.status, first.status)
		}
		if !a.sameBody(replay, first) {
			if a.identity(replay) != a.identity(first) {
				keys = append(keys, o.key)
				c.twice(o.key, Critical, "the replay names another resource (%s, first %s)", a.identity(replay), a.identity(first))
			} else {
				c.fail(High, "the replay's body differs from the first answer's (%s)", bodyDiff(first.answer, replay.answer))
			}
		}
		for _, h := range []string{"Content-Type", "Location"} {
			if x, y := first.header.Get(h), replay.header.Get(h); x != y {
				c.fail(Medium, "the replay's %s is %q, the first answer's %q", h, y, x)
			}
		}
		if a.marker != "" && !strings.EqualFold(replay.header.Get(a.marker), "true") {
			c.fail(Medium, "the replay has no %s: true header, which the %s profile declares", a.marker, a.profile.Name)
		}
	}
	c.count(ctx, keys...)
	if compared == 0 && len(c.findings) == 0 {
		c.unknown("no replay was answered 2xx: nothing to compare")
		return
	}
	c.pass = "the replay equals the first answer: status, body (minus volatile fields), Content-Type, Location"
	if a.marker != "" {
		c.pass += ", and carries " + a.marker + ": true"
	}
}

// bodyDiff names the top-level members two JSON objects disagree on.
func bodyDiff(x, y []byte) string {
	mx, okx := members(x)
	my, oky := members(y)
	if !okx || !oky {
		return "not the same bytes"
	}
	vals := func(ms []member) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			out[m.name] = string(m.value)
		}
		return out
	}
	vx, vy := vals(mx), vals(my)
	var diffs []string
	for _, m := range mx {
		if v, ok := vy[m.name]; !ok {
			diffs = append(diffs, m.name+" missing")
		} else if v != vx[m.name] {
			diffs = append(diffs, m.name+" changed")
		}
	}
	for _, m := range my {
		if _, ok := vx[m.name]; !ok {
			diffs = append(diffs, m.name+" added")
		}
	}
	if len(diffs) == 0 {
		return "the same members, written differently"
	}
	return strings.Join(diffs, ", ")
}

func runC18(ctx context.Context, a *Auditor, c *checkRun) {
	o, err := a.newOp(ctx)
	if err != nil {
		c.unknown("%v", err)
		return
	}
	with := a.send(ctx, req{label: "GET with a key", op: o, method: http.MethodGet})
	without := a.send(ctx, req{label: "GET without a key", op: o, method: http.MethodGet, noKey: true})
	c.show(with, without)
	switch {
	case with.err != nil || without.err != nil:
		c.bad(with, "GET with a key")
		c.bad(without, "GET without a key")
	case with.status == without.status:
		c.pass = fmt.Sprintf("GET answered %d with a key and without: the key is ignored", with.status)
	case with.is5xx():
		c.fail(High, "GET with a key was answered %d, without one %d", with.status, without.status)
	default:
		c.fail(Medium, "GET with a key was answered %d, without one %d: a safe method must ignore the key", with.status, without.status)
	}
}

func runDK(ctx context.Context, a *Auditor, c *checkRun) {
	var keys []string
	for round := 1; round <= 2; round++ {
		o, err := a.newOp(ctx)
		if err != nil {
			c.unknown("%v", err)
			return
		}
		first := a.send(ctx, req{label: label(round, "first key"), op: o})
		if !c.first(first, "the first key's request") {
			continue
		}
		o2 := o
		o2.key = a.newKey()
		body := o.body
		if a.keyField != "" {
			if body, err = setField(o.body, a.keyField, o2.key); err != nil {
				c.unknown("%v", err)
				return
			}
		}
		o2.body = body
		second := a.send(ctx, req{label: label(round, "a new key, the same body"), op: o2})
		c.show(second)
		switch {
		case c.bad(second, "the new key"):
		case second.ok() && a.replayOf(second, first):
			c.fail(High, "a new key with the same body got the first key's answer (%s): dedup by content, not by key", a.identity(first))
		case second.ok():
			keys = append(keys, o.key, o2.key)
		default:
			c.fail(High, "a new key with the same body was answered %d: dedup by content, not by key", second.status)
		}
	}
	if c.once(ctx, keys...) {
		c.pass = "the same body under two fresh keys: two operations, 1 effect each"
	} else {
		c.pass = "the same body under two fresh keys: two operations, two resources (judged from the answers alone)"
	}
}
