package checks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/jsonobj"
)

// The roles of a probe's requests (Label, Role): the audit's probes label
// each request with one, and the judges below find them by it. A role has
// no ", " in it (what follows is detail).
const (
	RoleNoKey         = "without a key"
	RoleQuoted        = "the key in its quoted form"
	RoleRaw           = "the same key raw"
	RoleFirst         = "first"
	RoleIdentical     = "identical retry"
	RoleMismatch      = "same key with another body"
	RoleReordered     = "the same JSON with its fields reordered"
	RoleRespaced      = "the same JSON re-spaced"
	RoleCopy          = "copy"
	RoleBody          = "body"
	RoleCopyInFlight  = "copy while in flight"
	RoleCopyRetried   = "the copy retried unchanged"
	RoleRetry         = "retry"
	RoleImmediate     = "immediate retry"
	RoleLater         = "replay after both finished"
	RoleErrorBody     = "the error body (--error-data)"
	RoleNormal        = "the normal body under the same key"
	RoleWithin        = "replay within the retention"
	RolePast          = "replay past the retention"
	RoleFirstUser     = "the first principal"
	RoleSecondUser    = "the second principal (--as)"
	RoleQuery         = "same key with a query string added"
	RoleSibling       = "same key on a sibling path"
	RoleReplay        = "replay"
	RoleGetWithKey    = "GET with a key"
	RoleGetWithoutKey = "GET without a key"
	RoleFirstKey      = "first key"
	RoleNewKey        = "a new key with the same body"
	RoleCalibration   = "calibration"
	// RoleLink is a request to another endpoint whose answer gives a
	// path parameter (history.CheckLinks); its detail names it.
	RoleLink = "link"
	// C28: the request in flight when the API's process was killed, and
	// its retries once the API was back.
	RoleCrashed      = "in flight when the API was killed"
	RoleAfterRestart = "retry after the restart"
	// RoleOriginal is C04's original request sent again after the
	// mismatch; RoleWinnerAgain C07's processed body sent again after the
	// round: each must get the first answer, not the refusal.
	RoleOriginal    = "the original request again"
	RoleWinnerAgain = "the processed body again"
	// RoleOwnKey is C15's second principal sending a key of its own: the
	// oracle counts it only if it sees the second principal's effects.
	RoleOwnKey = "the second principal with a key of its own"
)

// KeyShape is a malformed key C02 sends.
type KeyShape struct {
	// What names the shape; it is the label of its request.
	What string
	// MayAccept is true for a key that is not invalid everywhere (no
	// length limit): accepting it is noted, not failed.
	MayAccept bool
}

// KeyShapes are the malformed keys C02 sends, in order.
var KeyShapes = []KeyShape{
	{"an empty key", false},
	{"a 300-character key", true},
	{"a 500-character key", true},
	{"a key with a tab inside", false},
}

// Policies an audit can declare for errors (history.Contract.Errors).
const (
	// ErrorsCached: an error answer is stored under the key, as a success
	// would be; a retry gets it replayed (Stripe).
	ErrorsCached = "cached"
	// ErrorsReExecuted: an error releases the key; a retry executes again
	// (Powertools).
	ErrorsReExecuted = "re-executed"
)

// contractDefs are the checks in the order an audit runs them.
var contractDefs = []contractDef{
	{id: "C01", name: "missing-key", severity: Medium, judge: judgeC01},
	{id: "C02", name: "key-format", severity: High, judge: judgeC02},
	{id: "C03", name: "sequential-replay", severity: Critical, judge: judgeC03},
	{id: "C04", name: "payload-mismatch", severity: Critical, judge: judgeC04},
	{id: "C05", name: "equivalent-body", severity: Medium, judge: judgeC05},
	{id: "C06", name: "concurrent-same-key", severity: Critical, judge: judgeC06},
	{id: "C07", name: "concurrent-mismatch", severity: Critical, judge: judgeC07},
	{id: "C08", name: "409-is-retryable", severity: High, judge: judgeC08},
	{id: "C09", name: "dropped-ack", severity: Critical, judge: judgeC09},
	{id: "C10", name: "timeout-in-flight", severity: Critical, judge: judgeC10},
	{id: "C11", name: "reset-before-send", severity: Critical, judge: judgeC11},
	{id: "C12", name: "error-caching", severity: Critical, judge: judgeC12},
	{id: "C13", name: "stuck-in-flight", severity: High, judge: judgeC13},
	{id: "C14", name: "expiry", severity: Critical, judge: judgeC14},
	{id: "C15", name: "cross-user", severity: Critical, judge: judgeC15},
	{id: "C16", name: "cross-endpoint", severity: Critical, judge: judgeC16},
	{id: "C17", name: "replay-fidelity", severity: Critical, judge: judgeC17},
	{id: "C18", name: "safe-method", severity: High, judge: judgeC18},
	{id: "DK", name: "distinct-keys", severity: High, judge: judgeDK},
	{id: "C24", name: "retention-by-count", severity: Critical, judge: judgeC24},
	{id: "C25", name: "concurrent-distinct-keys", severity: Critical, judge: judgeC25},
	{id: "C26", name: "keyless-two-customers", severity: Critical, judge: judgeC26},
	{id: "C27", name: "long-shared-prefix", severity: High, judge: judgeC27},
	{id: "C28", name: "crash-in-flight", severity: Critical, judge: judgeC28},
	{id: "W01", name: "forged-delivery", severity: Critical, judge: judgeW01},
}

// roundOf is the round a label names, 0 for none.
func roundOf(label string) int {
	s, ok := strings.CutPrefix(label, "round ")
	if !ok {
		return 0
	}
	n, _, _ := strings.Cut(s, ":")
	r, _ := strconv.Atoi(n)
	return r
}

// roundOfOp is the round of an op's first attempt.
func roundOfOp(o probeOp) int {
	if len(o.atts) == 0 {
		return 0
	}
	return roundOf(o.atts[0].Label)
}

func judgeC01(c *contractRun, ops []probeOp) {
	e := ops[0].one(RoleNoKey)
	c.show(e)
	if c.bad(e, "the request without a key") {
		return
	}
	want := c.prof.MissingKey
	processes := history.Matches(want, 200)
	switch {
	case history.Matches(want, e.Status):
		c.pass = fmt.Sprintf("without a key: %d, as the %s profile expects", e.Status, c.prof.Name)
	case processes && e.Status >= 400 && e.Status < 500:
		c.pass = fmt.Sprintf("without a key: %d, stricter than the %s profile (which processes it without dedup)", e.Status, c.prof.Name)
	case e.Acked():
		c.fail(Medium, "the request without a key was processed (%d): its retries cannot be deduplicated; the %s profile expects %s", e.Status, c.prof.Name, orList(want))
	default:
		c.fail(Medium, "the request without a key was answered %d; the %s profile expects %s", e.Status, c.prof.Name, orList(want))
	}
}

// QuotedReading names C02's second effects reading: the effects of the
// quoted form "K" of its key, read apart from the raw form's so that an
// oracle that refuses the quoted form leaves the raw one's count usable.
const QuotedReading = "C02 quoted"

func judgeC02(c *contractRun, ops []probeOp) {
	var accepted, optional []string
	// A profile that processes a request without a key (stripe,
	// powertools) does not require a key, nor any form of one.
	keyless := history.Matches(c.prof.MissingKey, 200)
	for _, s := range KeyShapes {
		var e *history.Attempt
		for _, o := range ops {
			if e = o.one(s.What); e != nil {
				break
			}
		}
		c.show(e)
		switch {
		case c.bad(e, s.What):
		case e.Status >= 400 && e.Status < 500:
		case e.Acked() && s.MayAccept:
			accepted = append(accepted, s.What)
		case e.Acked() && keyless:
			optional = append(optional, s.What)
		case e.Acked():
			c.fail(Medium, "%s was accepted (%d): an invalid key must be rejected with 400", s.What, e.Status)
		default:
			c.fail(Medium, "%s was answered %d, want 400", s.What, e.Status)
		}
	}
	c.pass = "invalid keys rejected with 4xx, never 5xx"
	if len(accepted) > 0 {
		c.note("%s accepted (no length limit)", strings.Join(accepted, " and "))
	}
	if len(optional) > 0 {
		c.pass = "no 5xx for any key"
		c.note("%s processed, as the %s profile allows (it processes a request without a key)", strings.Join(optional, " and "), c.prof.Name)
	}
	// The quoted (structured-field string) and raw forms of one key, when
	// the key goes in a header.
	for _, o := range ops {
		q, raw := o.one(RoleQuoted), o.one(RoleRaw)
		if q == nil && raw == nil {
			continue
		}
		c.show(q, raw)
		if c.bad(q, "the quoted key") || c.bad(raw, "the raw key") {
			return
		}
		if !q.Acked() {
			c.note("the quoted form is rejected (%d)", q.Status)
			continue
		}
		if !raw.Acked() {
			c.note("the raw form after the quoted one was answered %d", raw.Status)
			continue
		}
		// Two resources named by id or Location are two keys, whatever the
		// oracle counts of the raw form alone; with an oracle, the effects
		// of both forms added up decide the rest (two bodies that differ
		// may be one resource).
		two := identity(raw) != identity(q) && !c.replayed(raw)
		how := fmt.Sprintf("two resources: %s, then %s", identity(q), identity(raw))
		if n := c.count(o.Key); n != nil {
			two = two && named(q) && named(raw)
			quoted := `"` + o.Key + `"`
			if nq := c.countIn(QuotedReading, quoted); nq == nil {
				c.note("the quoted form's effects could not be read: judged from the raw form's and the answers")
			} else if total := n[o.Key] + nq[quoted]; total >= 2 {
				two, how = true, fmt.Sprintf("%d effects: %d under the raw form, %d under the quoted one", total, n[o.Key], nq[quoted])
			}
		}
		switch {
		case !two:
			c.note("the quoted and raw forms name one key")
		case c.prof.Name == "draft":
			c.fail(Medium, `the quoted form "K" and the raw form K of one key are two keys (%s): under the draft the key is a structured-field string`, how)
		default:
			c.note("the quoted and raw forms are two keys (opaque keys: %s)", how)
		}
	}
}

func judgeC03(c *contractRun, ops []probeOp) {
	var keys []string
	for _, o := range ops {
		first := o.one(RoleFirst)
		if !c.first(first, "the first request") {
			continue
		}
		replay := o.one(RoleIdentical)
		c.show(replay)
		switch {
		case c.bad(replay, "an identical retry"):
		case replay.Acked():
			keys = append(keys, o.Key)
			if identity(replay) != identity(first) {
				c.twice(o.Key, High, "the identical retry names another resource (%s, first %s)", identity(replay), identity(first))
			}
		default:
			keys = append(keys, o.Key)
			c.fail(High, "an identical retry after the first answer (%d) was answered %d", first.Status, replay.Status)
		}
	}
	if c.once(keys...) {
		c.pass = fmt.Sprintf("%d keys each sent twice: the retry got the first answer; 1 effect per key", len(ops))
	} else {
		c.pass = fmt.Sprintf("%d keys each sent twice: the retry got the first answer, the same resource (judged from the answers alone)", len(ops))
	}
}

func judgeC04(c *contractRun, ops []probeOp) {
	var keys []string
	mismatch := orList(c.prof.Mismatch)
	for _, o := range ops {
		first := o.one(RoleFirst)
		if !c.first(first, "the first request") {
			continue
		}
		e := o.one(RoleMismatch)
		c.show(e)
		keys = append(keys, o.Key)
		switch {
		case c.bad(e, "another body under a used key"):
		case history.Matches(c.prof.Mismatch, e.Status):
		case e.Acked() && c.replayOf(e, first):
			c.fail(Medium, "another body under a used key was answered %d with the first answer (a silent replay); the %s profile expects %s", e.Status, c.prof.Name, mismatch)
		case e.Acked() && identity(e) != identity(first):
			c.twice(o.Key, Medium, "another body under a used key was answered %d naming another resource (%s, first %s)", e.Status, identity(e), identity(first))
		case e.Acked():
			c.ambiguous(o.Key, Medium, "another body under a used key was answered %d about the same resource (%s) with another body", e.Status, identity(e))
		default:
			c.fail(Medium, "another body under a used key was answered %d; the %s profile expects %s", e.Status, c.prof.Name, mismatch)
		}
		c.again(o, first, o.one(RoleOriginal), "the original request sent again after another body")
	}
	if n := c.count(keys...); n != nil {
		for _, k := range keys {
			if n[k] >= 2 {
				c.fail(Critical, "key %s has %d effects after another body was sent under it", k, n[k])
			}
		}
		c.pass = fmt.Sprintf("another body under a used key: %s, 1 effect per key%s", mismatch, sentAgain(ops, RoleOriginal))
		return
	}
	c.pass = fmt.Sprintf("another body under a used key: %s%s (judged from the answers alone)", mismatch, sentAgain(ops, RoleOriginal))
}

// sentAgain is what a passing summary adds when requests of role were
// sent again after a refusal.
func sentAgain(ops []probeOp, role string) string {
	for _, o := range ops {
		if o.one(role) != nil {
			return "; sent again afterwards, the processed request got its first answer"
		}
	}
	return ""
}

// again judges a request sent again after a refused one under its key
// (C04, C07): it must get first's answer; a refusal (the refused
// request's answer stored over the first) or another resource is a
// finding.
func (c *contractRun) again(o probeOp, first, e *history.Attempt, what string) {
	if e == nil {
		return
	}
	c.show(e)
	switch {
	case c.bad(e, what):
	case e.Acked() && (c.replayOf(e, first) || identity(e) == identity(first)):
	case e.Acked():
		c.twice(o.Key, High, "%s names another resource (%s, first %s)", what, identity(e), identity(first))
	default:
		c.fail(High, "%s was answered %d, not the first answer (%d): the refusal replaced the stored answer", what, e.Status, first.Status)
	}
}

func judgeC05(c *contractRun, ops []probeOp) {
	var keys []string
	tried := 0
	for _, o := range ops {
		first := o.one(RoleFirst)
		if !c.first(first, "the first request") {
			continue
		}
		keys = append(keys, o.Key)
		for _, role := range []string{RoleReordered, RoleRespaced} {
			e := o.one(role)
			if e == nil {
				continue
			}
			tried++
			c.show(e)
			switch {
			case c.bad(e, role):
			case e.Acked() && identity(e) == identity(first):
			case e.Acked():
				c.twice(o.Key, High, "%s names another resource (%s, first %s)", role, identity(e), identity(first))
			default:
				c.fail(Medium, "%s under its key was answered %d: the payload fingerprint hashes the raw bytes, not the JSON", role, e.Status)
			}
		}
	}
	if tried == 0 {
		c.skip = "the body has no other equivalent form"
		return
	}
	if c.once(keys...) {
		c.pass = "the same JSON reordered or re-spaced got the replay; 1 effect per key"
	} else {
		c.pass = "the same JSON reordered or re-spaced got the replay (judged from the answers alone)"
	}
}

func judgeC06(c *contractRun, ops []probeOp) {
	rounds, copies := len(ops), len(ops[0].copies(RoleCopy))
	var keys []string
	multi := map[string]int{} // key → resources its 2xx answers named, when more than one
	most, undecided := 0, 0
	var showRound []*history.Attempt
	var all [][]*history.Attempt
	for _, o := range ops {
		round := roundOfOp(o)
		cs := o.copies(RoleCopy)
		all = append(all, cs)
		ids := map[string]bool{}
		bad := false
		for _, e := range cs {
			switch {
			case is5xx(e) || e.Outcome != history.OK:
				bad = c.bad(e, fmt.Sprintf("round %d: a concurrent copy", round)) || bad
			case e.Acked():
				ids[identity(e)] = true
			case !c.rejectedOK(e.Status, false):
				bad = true
				c.fail(Medium, "round %d: a concurrent identical copy was answered %d; the %s profile expects %s in flight", round, e.Status, c.prof.Name, orList(c.prof.InFlight))
			}
		}
		switch {
		case len(ids) == 0:
			undecided++
		case len(ids) > 1:
			multi[o.Key] = len(ids)
			most = max(most, len(ids))
			bad = true
			fallthrough
		default:
			keys = append(keys, o.Key)
		}
		if bad && (showRound == nil || len(multi) == 1 && multi[o.Key] > 1) || showRound == nil {
			showRound = cs
		}
	}
	c.show(showRound...)
	c.raceNotes(all)
	if undecided > 0 {
		c.unknown("%d of %d rounds had no 2xx answer", undecided, rounds)
	}
	n := c.count(keys...)
	if n == nil {
		if len(multi) > 0 {
			c.fail(Critical, "%d rounds of %d concurrent copies: %d rounds got 2xx answers naming up to %d different resources: executed more than once (judged from the answers alone)",
				rounds, copies, len(multi), most)
		}
		c.pass = fmt.Sprintf("%d rounds of %d concurrent copies: one resource per round, the other copies 409 or a replay (judged from the answers alone)", rounds, copies)
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
		c.fail(Critical, "%d rounds of %d concurrent copies: %d rounds charged twice or more (up to %d effects)", rounds, copies, twice, top)
	}
	if replays > 0 {
		c.fail(High, "%d rounds of %d concurrent copies: %d rounds answered copies naming different resources, with 1 effect: replays that name another resource", rounds, copies, replays)
	}
	c.pass = fmt.Sprintf("%d rounds of %d concurrent copies: 1 effect each, the other copies 409 or a replay", rounds, copies)
}

func judgeC07(c *contractRun, ops []probeOp) {
	rounds, copies := len(ops), len(ops[0].copies(RoleBody))
	var keys []string
	var showRound []*history.Attempt
	for _, o := range ops {
		round := roundOfOp(o)
		cs := o.copies(RoleBody)
		ids := map[string]int{}
		var oks []*history.Attempt
		bad := false
		for _, e := range cs {
			switch {
			case is5xx(e) || e.Outcome != history.OK:
				bad = c.bad(e, fmt.Sprintf("round %d: a concurrent copy", round)) || bad
			case e.Acked():
				ids[identity(e)]++
				oks = append(oks, e)
			case !c.rejectedOK(e.Status, true):
				bad = true
				c.fail(Medium, "round %d: a concurrent copy with another body was answered %d; the %s profile expects %s or %s", round, e.Status, c.prof.Name,
					orList(c.prof.InFlight), orList(c.prof.Mismatch))
			}
		}
		switch {
		case len(ids) > 1:
			bad = true
			c.fail(Critical, "round %d: %d different bodies under one key were each processed (%d resources)", round, len(ids), len(ids))
		case len(oks) > 1:
			keys = append(keys, o.Key)
			bad = true
			if c.replayOf(oks[1], oks[0]) {
				c.fail(Medium, "round %d: a copy with another body got the winner's answer (a silent replay)", round)
			} else {
				c.ambiguous(o.Key, Medium, "round %d: copies with different bodies were answered 2xx about the same resource (%s) with different bodies", round, identity(oks[0]))
			}
		case len(oks) == 1:
			keys = append(keys, o.Key)
			n := len(c.findings)
			c.again(o, oks[0], o.one(RoleWinnerAgain), fmt.Sprintf("round %d: the processed body sent again after the round", round))
			if len(c.findings) > n {
				bad = true
				cs = append(cs, o.one(RoleWinnerAgain))
			}
		}
		if bad && showRound == nil || showRound == nil {
			showRound = cs
		}
	}
	c.show(showRound...)
	if n := c.count(keys...); n != nil {
		for _, k := range keys {
			if n[k] >= 2 {
				c.fail(Critical, "key %s has %d effects after concurrent different bodies", k, n[k])
			}
		}
		c.pass = fmt.Sprintf("%d rounds of %d different bodies under one key: at most 1 effect, the others refused%s", rounds, copies, sentAgain(ops, RoleWinnerAgain))
		return
	}
	c.pass = fmt.Sprintf("%d rounds of %d different bodies under one key: one processed, the others refused%s (judged from the answers alone)", rounds, copies, sentAgain(ops, RoleWinnerAgain))
}

func judgeC08(c *contractRun, ops []probeOp) {
	informative := 0
	var keys []string
	for _, o := range ops {
		first, cp := o.one(RoleFirst), o.one(RoleCopyInFlight)
		if c.bad(first, "the first request") || c.bad(cp, "the copy") {
			continue
		}
		if !busy(cp) {
			continue // finished before the copy came: nothing to retry
		}
		informative++
		last := cp
		if l := o.last(RoleCopyRetried); l != nil {
			last = l
		}
		c.show(first, cp, last)
		keys = append(keys, o.Key)
		switch {
		case c.bad(last, "a retry after 409"):
		case busy(last):
			c.fail(High, "the copy got %d for %v of retries after the first request was answered %d: the key is stuck", last.Status, c.ct.Lease, first.Status)
		case last.Acked() && first.Acked() && identity(last) != identity(first):
			c.twice(o.Key, High, "the retried copy names another resource (%s, first %s)", identity(last), identity(first))
		case !last.Acked():
			c.fail(High, "the copy retried unchanged after 409 was answered %d", last.Status)
		}
	}
	if informative == 0 {
		c.skip = fmt.Sprintf("no copy was answered 409 in %d rounds: the first request finished before its copy arrived", len(ops))
		return
	}
	if n := c.count(keys...); n != nil {
		for _, k := range keys {
			if n[k] >= 2 {
				c.fail(Critical, "key %s has %d effects", k, n[k])
			}
		}
	}
	c.pass = fmt.Sprintf("%d copies answered 409 while the first was in flight; retried unchanged, each got the first answer", informative)
}

func judgeC09(c *contractRun, ops []probeOp) {
	var keys []string
	informative := 0
	for _, o := range ops {
		round := roundOfOp(o)
		first := o.one(RoleFirst)
		c.show(first)
		hidden := hiddenOf(first)
		if hidden == nil {
			if first == nil || !first.Expired {
				c.bad(first, "the first request")
			}
			continue
		}
		last := o.last(RoleRetry)
		c.show(last)
		switch {
		case c.bad(last, "the retry after a dropped answer"):
		case busy(last):
			c.fail(High, "the retry after a dropped answer got %d for %v: the key is stuck", last.Status, c.ct.Lease)
		case !hidden.Acked():
			c.note("round %d: the dropped answer was %d", round, hidden.Status)
		case !last.Acked():
			c.fail(High, "the retry after a dropped %d was answered %d", hidden.Status, last.Status)
		case identity(last) != identity(hidden):
			informative++
			keys = append(keys, o.Key)
			c.twice(o.Key, High, "the retry after a dropped answer names another resource (%s, dropped %s)", identity(last), identity(hidden))
		default:
			informative++
			keys = append(keys, o.Key)
		}
	}
	if c.once(keys...) {
		c.pass = fmt.Sprintf("%d answers dropped after the server sent them: each retry got the hidden answer; 1 effect per key", informative)
	} else {
		c.pass = fmt.Sprintf("%d answers dropped after the server sent them: each retry got the hidden answer, the same resource (judged from the answers alone)", informative)
	}
}

// C10Overlapped reports whether the retries of a request the client gave
// up on (first) met it still in flight: one was answered busy (409, 425,
// 429), or the first waited for its answer at least half as long as the
// first request was given (a server that holds a retry until the request
// in flight ends). A retry answered the replay at once came after the
// first ended: it tests a sequential replay, not the overlap C10 is about.
func C10Overlapped(first *history.Attempt, tries []*history.Attempt) bool {
	if first == nil || len(tries) == 0 {
		return false
	}
	if slices.ContainsFunc(tries, busy) {
		return true
	}
	r := tries[0]
	return r.Outcome == history.OK && (r.End-r.Start) >= (first.End-first.Start)/2
}

func judgeC10(c *contractRun, ops []probeOp) {
	var keys []string
	informative, overlapped := 0, 0
	for _, o := range ops {
		first := o.one(RoleFirst)
		c.show(first)
		if first == nil || first.Outcome == history.OK {
			// Answered in time: no overlap to test (the probe tried the
			// round again, giving up sooner).
			c.bad(first, "the first request")
			continue
		}
		informative++
		tries := o.role(RoleImmediate)
		if len(tries) == 0 {
			c.bad(nil, "the retry of an abandoned request")
			continue
		}
		if C10Overlapped(first, tries) {
			overlapped++
		}
		last := tries[len(tries)-1]
		c.show(tries[0], last)
		switch {
		case c.bad(last, "the retry of an abandoned request"):
			continue
		case busy(last):
			c.fail(High, "the retry of an abandoned request got %d for %v: the key is stuck", last.Status, c.ct.Lease)
			continue
		case !last.Acked():
			c.fail(High, "the retry of an abandoned request was answered %d", last.Status)
			continue
		}
		// Every acknowledged key is counted, overlapped or not: a second
		// effect is a failure however it came about.
		keys = append(keys, o.Key)
		later := o.one(RoleLater)
		c.show(later)
		switch {
		case c.bad(later, "the replay"):
		case later.Acked() && identity(later) != identity(last):
			c.twice(o.Key, High, "the key answered two resources (%s, then %s) after a request abandoned mid-flight", identity(last), identity(later))
		}
	}
	if informative == 0 {
		c.skip = fmt.Sprintf("the API answered within %v, before the client could give up: no overlap to test", c.cc.Cut)
		return
	}
	once := c.once(keys...)
	if len(c.findings) > 0 {
		return
	}
	if overlapped == 0 {
		// Nothing was judged: a pass here would vouch for the in-flight
		// path on the strength of sequential replays.
		c.skip = fmt.Sprintf("in %d rounds the abandoned request ended before its retry arrived (each retry got the replay at once, never 409): no overlap to test", informative)
		return
	}
	if once {
		c.pass = fmt.Sprintf("%d of %d requests abandoned mid-flight met by their retry in flight (409, or the retry held until it ended), then the replay; 1 effect per key", overlapped, informative)
		return
	}
	if len(keys) > 0 {
		c.unknown("the abandoned request's answer was lost: without --effects the answers cannot tell whether it executed as well as its retry")
	}
}

func judgeC11(c *contractRun, ops []probeOp) {
	var keys []string
	for _, o := range ops {
		first, last := o.one(RoleFirst), o.last(RoleRetry)
		c.show(first, last)
		switch {
		case c.bad(last, "the retry after a reset"):
		case !last.Acked():
			c.fail(High, "the retry of a request that never left the client was answered %d", last.Status)
		default:
			keys = append(keys, o.Key)
		}
	}
	if c.once(keys...) {
		c.pass = fmt.Sprintf("%d requests reset before sending, then retried: processed once each; 1 effect per key", len(ops))
	} else {
		c.pass = fmt.Sprintf("%d requests reset before sending, then retried: each retry processed (the reset attempt never left the client; judged from the answers alone)", len(ops))
	}
}

func judgeC12(c *contractRun, ops []probeOp) {
	var policy, keys []string
	declared := c.ct.Errors
	for _, o := range ops {
		round := roundOfOp(o)
		failed := o.one(RoleErrorBody)
		c.show(failed)
		if failed == nil || failed.Outcome != history.OK {
			c.bad(failed, "the error body")
			continue
		}
		if failed.Acked() {
			c.skip = fmt.Sprintf("--error-data was answered %d: it must be a body the API fails on", failed.Status)
			return
		}
		tries := o.role(RoleNormal)
		keys = append(keys, o.Key)
		if len(tries) == 0 {
			c.bad(nil, "the retry after an error")
			continue
		}
		retry := tries[len(tries)-1]
		c.show(tries[0], retry)
		if retry.Outcome != history.OK {
			c.bad(retry, "the retry after an error")
			continue
		}
		policy = append(policy, c.afterError(round, failed, tries))
		switch {
		case is5xx(retry) && !is5xx(failed):
			c.fail(High, "after a %d, the retry under the same key was answered %d", failed.Status, retry.Status)
		case declared == ErrorsReExecuted && !retry.Acked():
			c.fail(Medium, "after a %d the key stays failed (the retry with the normal body was answered %d): the error was kept, but --errors re-executed says an error releases the key", failed.Status, retry.Status)
		case declared == ErrorsCached && retry.Acked():
			c.fail(Medium, "after a %d the key was executed again (%d): --errors cached says the error is kept under the key", failed.Status, retry.Status)
		}
	}
	if n := c.count(keys...); n != nil {
		for _, k := range keys {
			if n[k] >= 2 {
				c.fail(Critical, "key %s has %d effects: the failed attempt left one, and the retry another", k, n[k])
			}
		}
	}
	if len(policy) == 0 {
		return
	}
	if declared == "" {
		c.pass = fmt.Sprintf("errors are %s (no policy declared: give --errors to judge it)", policy[0])
	} else {
		c.pass = fmt.Sprintf("errors are %s, as declared", policy[0])
	}
}

// afterError says what the retries with the normal body after an error
// answer (tries, in order) show: the key processed (re-executed), the error
// replayed, or the corrected body refused as the profile's mismatch
// (cached). A 4xx that is neither, for every retry, is a burnt key: a
// valid request never processed (high).
func (c *contractRun) afterError(round int, failed *history.Attempt, tries []*history.Attempt) string {
	for i, t := range tries {
		if t.Acked() {
			if i > 0 {
				c.note("round %d: the key was processed on the %s retry after the error", round, ordinal(i+1))
			}
			return ErrorsReExecuted
		}
	}
	last := tries[len(tries)-1]
	burnt := 0
	for _, t := range tries {
		switch {
		case t.Outcome != history.OK || is5xx(t):
		case t.Status == failed.Status && c.replayOf(t, failed):
		case history.Matches(c.prof.Mismatch, t.Status):
		default:
			burnt++
		}
	}
	switch {
	case burnt == len(tries):
		c.fail(High, "after a %d, the corrected request under the same key was answered %d to each of its %d tries, not the error replayed nor the %s profile's mismatch code: the key is burnt, a valid request is never processed",
			failed.Status, last.Status, len(tries), c.prof.Name)
		return "burnt"
	case last.Status == failed.Status && c.replayOf(last, failed):
		return ErrorsCached + " (the error replayed)"
	}
	return fmt.Sprintf("%s (the corrected body refused %d, as another payload under the key)", ErrorsCached, last.Status)
}

// ordinal is "second", "third"… for small n.
func ordinal(n int) string {
	if names := []string{"", "first", "second", "third", "fourth", "fifth"}; n < len(names) {
		return names[n]
	}
	return strconv.Itoa(n) + "th"
}

func judgeC13(c *contractRun, ops []probeOp) {
	var keys []string
	abandoned := 0
	for _, o := range ops {
		first := o.one(RoleFirst)
		c.show(first)
		if first != nil && first.Outcome == history.OK && c.bad(first, "the first request") {
			continue
		}
		if first != nil && first.Outcome != history.OK {
			abandoned++
		}
		last := o.last(RoleRetry)
		c.show(last)
		switch {
		case c.bad(last, "the retry"):
		case busy(last):
			c.fail(High, "the key still answered %d %v after its client went away (the lease): it is stuck in flight", last.Status, (last.End - first.Start).Round(100*time.Millisecond))
		case !last.Acked():
			c.fail(High, "the retry after the client went away was answered %d", last.Status)
		case first.Acked() && identity(first) != identity(last):
			keys = append(keys, o.Key)
			c.twice(o.Key, High, "the retry names another resource (%s, first %s)", identity(last), identity(first))
		default:
			keys = append(keys, o.Key)
		}
	}
	if n := c.count(keys...); n != nil {
		for _, k := range keys {
			if n[k] >= 2 {
				c.fail(Critical, "key %s has %d effects", k, n[k])
			}
		}
	}
	if abandoned == 0 && len(c.findings) == 0 {
		// Every first request was answered before the client gave up: the
		// retries were sequential replays, and nothing was left in flight.
		c.skip = fmt.Sprintf("the API answered within %v, before the client could give up: nothing was left in flight", c.cc.Cut)
		return
	}
	c.pass = fmt.Sprintf("%s abandoned mid-flight: the retries got the answer within the lease (%v)", plural(abandoned, "request", "requests"), c.ct.Lease)
}

func judgeC14(c *contractRun, ops []probeOp) {
	ret := c.ct.Retention
	o := ops[0]
	first := o.one(RoleFirst)
	if !c.first(first, "the first request") {
		return
	}
	before := o.one(RoleWithin)
	c.show(before)
	switch {
	case c.bad(before, "the replay within the retention"):
		return
	case before.Acked() && identity(before) != identity(first):
		c.twice(o.Key, High, "within the declared retention (%v) the key answered another resource (%s, first %s)", ret, identity(before), identity(first))
	case !before.Acked():
		c.fail(High, "within the declared retention (%v) the replay was answered %d", ret, before.Status)
	}
	// Past the retention the probe sends concurrent copies: one may
	// execute anew, the others must be refused in flight or get its
	// replay.
	after := o.role(RolePast)
	fresh := map[string]bool{} // the new resources the copies named
	replayed, refused := 0, 0
	var refusal *history.Attempt
	for _, e := range after {
		c.show(e)
		switch {
		case c.bad(e, "a request past the retention"):
		case e.Acked() && identity(e) == identity(first):
			replayed++
		case e.Acked():
			fresh[identity(e)] = true
		case c.rejectedOK(e.Status, false):
		default:
			refused++
			refusal = e
		}
	}
	n := c.count(o.Key)
	switch {
	case n != nil && n[o.Key] >= 3:
		c.fail(Critical, "past the declared retention (%v), %d concurrent requests executed %d times (%d effects in all)", ret, len(after), n[o.Key]-1, n[o.Key])
	case len(fresh) >= 2 && n == nil:
		c.fail(Critical, "past the declared retention (%v), %d concurrent requests got %d new resources: executed more than once (judged from the answers alone)", ret, len(after), len(fresh))
	case len(fresh) >= 2:
		c.fail(High, "past the declared retention (%v), concurrent requests got %d new resources, but the oracle counts %d effects: replays that name another resource", ret, len(fresh), n[o.Key])
	case len(fresh) == 0 && replayed > 0:
		c.fail(Info, "past the declared retention (%v) the key is still replayed: keys outlive what the API declares", ret)
	case len(fresh) == 0 && refused > 0:
		c.fail(Info, "past the declared retention (%v) the key was answered %d, not processed as new", ret, refusal.Status)
	}
	c.pass = fmt.Sprintf("replayed within the retention (%v), processed as new past it", ret)
	if len(after) > 1 {
		c.pass += fmt.Sprintf(", once for %d concurrent requests", len(after))
	}
}

func judgeC15(c *contractRun, ops []probeOp) {
	// With an oracle, a key of the second principal's own says whether the
	// oracle sees that principal's effects: then one effect for a key both
	// principals sent means the second was served the first's, whatever
	// its answer looks like.
	sees := false
	for _, o := range ops {
		own := o.one(RoleOwnKey)
		if own == nil {
			continue
		}
		c.show(own)
		if n := c.count(o.Key); n != nil && own.Acked() {
			sees = n[o.Key] >= 1
			if !sees {
				c.note("the oracle does not count the second principal's effects (its own key read %d): judged from the answers", n[o.Key])
			}
		}
	}
	for _, o := range ops {
		first := o.one(RoleFirstUser)
		if first == nil {
			continue
		}
		if !c.first(first, "the first principal's request") {
			continue
		}
		other := o.one(RoleSecondUser)
		c.show(other)
		switch {
		case c.bad(other, "the second principal's request"):
		case other.Status == 401 || other.Status == 403:
			c.unknown("the second principal was refused (%d): check --as", other.Status)
		case other.Acked() && c.sharedAnswer(other, first) && !c.replayOf(other, first) && !sees:
			c.unknownShared("the two principals' requests with one key")
		case other.Acked() && (c.replayOf(other, first) || !c.sharedAnswer(other, first) && (identity(other) == identity(first) || carries(other, first))):
			c.fail(Critical, "the second principal received the first principal's answer (%s) for the same key: a data leak, and its own request was never processed", identity(first))
		case other.Acked() && sees:
			if n := c.count(o.Key); n != nil && n[o.Key] < 2 {
				c.fail(Critical, "the second principal's request was answered %d, but the oracle counts %d effect for the key both principals sent: the second was served the first's (a data leak), whatever its answer's shape", other.Status, n[o.Key])
			}
		case other.Acked():
		default:
			c.fail(Medium, "the second principal's request with the first's key was answered %d: keys are not scoped per user (nothing leaked)", other.Status)
		}
	}
	c.pass = "the same key from two principals: each processed on its own, nothing of the first's answer to the second"
	if sees {
		c.pass += "; 2 effects per key"
	}
}

func judgeC16(c *contractRun, ops []probeOp) {
	for _, o := range ops {
		first := o.one(RoleFirst)
		if !c.first(first, "the first request") {
			continue
		}
		q := o.one(RoleQuery)
		c.show(q)
		switch {
		case c.bad(q, "the request with a query string added"):
		case q.Acked() && identity(q) != identity(first):
			c.twice(o.Key, High, "the same request with a query string added names another resource (%s, first %s)", identity(q), identity(first))
		}
		// The effects were read before the sibling path's request, whose
		// own effects would be counted under the same key.
		if n := c.count(o.Key); n != nil && n[o.Key] >= 2 {
			c.fail(Critical, "key %s has %d effects after the same request with a query string added", o.Key, n[o.Key])
		}
		sib := o.one(RoleSibling)
		c.show(sib)
		switch {
		case sib == nil:
		case is5xx(sib) || sib.Outcome != history.OK:
			c.note("the sibling path was answered %s", what(sib))
		case sib.Acked() && identity(sib) == identity(first) && sameBody(sib, first):
			where := "the sibling path"
			if sib.Request != nil {
				where += " " + pathOf(sib.Request.URL)
			}
			c.fail(High, "%s replayed the first path's answer for the same key: keys are not scoped per endpoint", where)
		}
	}
	c.pass = "with a query string added: the replay (one operation); on a sibling path: not the first path's answer"
}

// pathOf is the path of a URL as a request's evidence shows it.
func pathOf(u string) string {
	if _, rest, ok := strings.Cut(u, "://"); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return rest[i:]
		}
	}
	return u
}

func judgeC17(c *contractRun, ops []probeOp) {
	compared := 0
	var keys []string
	for _, o := range ops {
		round := roundOfOp(o)
		first := o.one(RoleFirst)
		if !c.first(first, "the first request") {
			continue
		}
		replay := o.one(RoleReplay)
		c.show(replay)
		if c.bad(replay, "the replay") {
			continue
		}
		if !replay.Acked() {
			c.note("round %d: the replay was answered %d (see C03)", round, replay.Status)
			continue
		}
		compared++
		if replay.Status != first.Status {
			c.fail(Info, "the replay's status is %d, the first answer's %d", replay.Status, first.Status)
		}
		if !sameBody(replay, first) {
			if identity(replay) != identity(first) {
				keys = append(keys, o.Key)
				c.twice(o.Key, Critical, "the replay names another resource (%s, first %s)", identity(replay), identity(first))
			} else {
				c.fail(High, "the replay's body differs from the first answer's (%s)", bodyDiff(first.Body, replay.Body))
			}
		}
		for _, h := range []string{"Content-Type", "Location"} {
			if x, y := first.Headers[h], replay.Headers[h]; x != y {
				c.fail(Medium, "the replay's %s is %q, the first answer's %q", h, y, x)
			}
		}
		if m := c.prof.Replayed; m != "" && !strings.EqualFold(replay.Headers[m], "true") {
			c.fail(Medium, "the replay has no %s: true header, which the %s profile declares", m, c.prof.Name)
		}
	}
	c.count(keys...)
	if compared == 0 && len(c.findings) == 0 {
		c.unknown("no replay was answered 2xx: nothing to compare")
		return
	}
	c.pass = "the replay equals the first answer: status, body (minus volatile fields), Content-Type, Location"
	if m := c.prof.Replayed; m != "" {
		c.pass += ", and carries " + m + ": true"
	}
}

// bodyDiff names the top-level members two JSON objects disagree on.
func bodyDiff(x, y string) string {
	mx, okx := jsonobj.Members([]byte(x))
	my, oky := jsonobj.Members([]byte(y))
	if !okx || !oky {
		return "not the same bytes"
	}
	vals := func(ms []jsonobj.Member) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			out[m.Name] = string(m.Value)
		}
		return out
	}
	vx, vy := vals(mx), vals(my)
	var diffs []string
	for _, m := range mx {
		if v, ok := vy[m.Name]; !ok {
			diffs = append(diffs, m.Name+" missing")
		} else if v != vx[m.Name] {
			diffs = append(diffs, m.Name+" changed")
		}
	}
	for _, m := range my {
		if _, ok := vx[m.Name]; !ok {
			diffs = append(diffs, m.Name+" added")
		}
	}
	if len(diffs) == 0 {
		return "the same members, written differently"
	}
	return strings.Join(diffs, ", ")
}

func judgeC18(c *contractRun, ops []probeOp) {
	o := ops[0]
	with, without := o.one(RoleGetWithKey), o.one(RoleGetWithoutKey)
	c.show(with, without)
	switch {
	case with == nil || without == nil || with.Outcome != history.OK || without.Outcome != history.OK:
		c.bad(with, "GET with a key")
		c.bad(without, "GET without a key")
	case with.Status == without.Status:
		c.pass = fmt.Sprintf("GET answered %d with a key and without: the key is ignored", with.Status)
	case is5xx(with):
		c.fail(High, "GET with a key was answered %d, without one %d", with.Status, without.Status)
	default:
		c.fail(Medium, "GET with a key was answered %d, without one %d: a safe method must ignore the key", with.Status, without.Status)
	}
}

func judgeDK(c *contractRun, ops []probeOp) {
	type pair struct{ a, b *probeOp }
	rounds := map[int]*pair{}
	var order []int
	for i := range ops {
		r := roundOfOp(ops[i])
		p := rounds[r]
		if p == nil {
			p = &pair{}
			rounds[r] = p
			order = append(order, r)
		}
		if ops[i].one(RoleNewKey) != nil {
			p.b = &ops[i]
		} else {
			p.a = &ops[i]
		}
	}
	slices.Sort(order)
	var keys []string
	for _, r := range order {
		p := rounds[r]
		if p.a == nil {
			continue
		}
		first := p.a.one(RoleFirstKey)
		if !c.first(first, "the first key's request") {
			continue
		}
		var second *history.Attempt
		if p.b != nil {
			second = p.b.one(RoleNewKey)
		}
		c.show(second)
		switch {
		case c.bad(second, "the new key"):
		case second.Acked() && c.replayOf(second, first):
			c.fail(High, "a new key with the same body got the first key's answer (%s): dedup by content, not by key", identity(first))
		case second.Acked():
			keys = append(keys, p.a.Key, p.b.Key)
		default:
			c.fail(High, "a new key with the same body was answered %d: dedup by content, not by key", second.Status)
		}
	}
	if c.once(keys...) {
		c.pass = "the same body under two fresh keys: two operations, 1 effect each"
	} else {
		c.pass = "the same body under two fresh keys: two operations, two resources (judged from the answers alone)"
	}
}

// judgeC28 judges requests the API's process was killed under (the
// user's --kill-cmd, then --start-cmd and --ready): once the API is back,
// the retry must be processed once, as a replay or as a first execution
// if the crash lost the key. A key still answered in flight past the
// lease (an in-progress record that outlived the process that held it)
// is stuck; a second effect is the request executed again. A round whose
// request was answered, or not yet sent, when the kill landed had nothing
// in flight, and says so; a crash that did not go as planned (a command
// failed, the API not ready in time) judges nothing.
func judgeC28(c *contractRun, ops []probeOp) {
	var keys []string
	inFlight := 0
	for _, o := range ops {
		round := roundOfOp(o)
		first := o.one(RoleCrashed)
		c.show(first)
		w := c.window(round)
		switch {
		case w == nil:
			c.unknown("round %d: no crash of the API was recorded", round)
			continue
		case w.Err != "":
			c.unknown("round %d: the crash did not go as planned: %s", round, w.Err)
			continue
		case first == nil:
			c.unknown("round %d: no request was sent before the crash", round)
			continue
		case first.Outcome == history.OK:
			c.note("round %d: the request was answered %d before the kill landed: nothing was in flight", round, first.Status)
			continue
		case first.Outcome == history.Fail:
			c.note("round %d: the request had not reached the API when it was killed: nothing was in flight", round)
			continue
		}
		inFlight++
		last := o.last(RoleAfterRestart)
		switch {
		case c.bad(last, fmt.Sprintf("round %d: the retry after the restart", round)):
		case busy(last):
			c.show(last)
			c.fail(High, "round %d: the key still answered %d %v after the API was back (the lease %v): its in-flight record outlived the crash and is stuck",
				round, last.Status, (last.End - w.Ready).Round(100*time.Millisecond), c.ct.Lease)
		case !last.Acked():
			c.show(last)
			c.fail(High, "round %d: the retry after the restart was answered %d", round, last.Status)
		default:
			c.show(last)
			keys = append(keys, o.Key)
		}
	}
	if inFlight == 0 {
		c.unknown("no request was in flight when the API was killed: nothing was judged")
	}
	if n := c.count(keys...); n != nil {
		for _, k := range keys {
			if n[k] >= 2 {
				c.fail(Critical, "key %s has %d effects: the request the crash cut was executed again by its retry", k, n[k])
			}
		}
	}
	c.pass = fmt.Sprintf("requests in flight when the API was killed: once it was back, each retry was processed once within the lease (%v)", c.ct.Lease)
}

// window is the crash of round, nil when none was recorded.
func (c *contractRun) window(round int) *history.NemesisWindow {
	for i := range c.nemesis {
		if c.nemesis[i].N == round {
			return &c.nemesis[i]
		}
	}
	return nil
}
