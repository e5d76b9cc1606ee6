package checks

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// Recorded audits, written by hand: each contract check judged on a
// history of a correct API and of a broken one. A broken history must be
// accused with the severity the contract gives (removing the accusation
// fails the test); a correct one must pass.

// ans is an answer for a hand-written attempt: the resource it names (its
// "id"), which also makes its fingerprint, unless body says otherwise.
type ans struct {
	label  string
	status int
	id     string // "" for none
	body   string // the fingerprint's source when not the id
	fault  string
	out    history.Outcome // 0: ok
	hdr    map[string]string
	hidden *ans // the answer a drop_ack hid
	noKey  bool
	key    string // the key sent, when not the op's
	as     bool   // sent as the second principal
	expire bool
	start  time.Duration
	end    time.Duration
}

type top struct {
	key  string
	atts []ans
}

func fp(s string) history.Fingerprint {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return history.Fingerprint(h)
}

// contractHistory is an audit's history of one check with ops, its
// effects reading (nil: none taken) and the profile.
func contractHistory(id string, ops []top, effects map[string]int, oracle bool, prof string, mod func(*history.Contract), extra ...history.Reading) *history.History {
	profiles := map[string]history.Profile{
		"draft":      {Name: "draft", InFlight: []string{"409"}, Mismatch: []string{"422"}, MissingKey: []string{"400"}},
		"stripe":     {Name: "stripe", InFlight: []string{"409"}, Mismatch: []string{"400"}, MissingKey: []string{"2xx"}, Replayed: "Idempotent-Replayed"},
		"powertools": {Name: "powertools", InFlight: []string{"4xx"}, Mismatch: []string{"4xx"}, MissingKey: []string{"2xx"}},
	}
	ct := &history.Contract{Method: "POST", URL: "http://api/charges", Lease: time.Second, Checks: []history.ContractCheck{{ID: id}}}
	if oracle {
		ct.Oracle = "GET /charges?key={{.Key}}"
	}
	if mod != nil {
		mod(ct)
	}
	h := &history.History{Meta: history.Meta{Judge: history.Judge{Profile: profiles[prof], Contract: ct}}}
	for i, o := range ops {
		h.Ops = append(h.Ops, history.Op{ID: i, Key: o.key, Check: id})
		for n, a := range o.atts {
			at := history.Attempt{Op: i, N: n + 1, Label: a.label, Fault: a.fault, Outcome: a.out, Status: a.status,
				Headers: a.hdr, Expired: a.expire, Start: a.start, End: a.end}
			if at.Outcome == 0 {
				at.Outcome = history.OK
			}
			if at.Outcome != history.OK {
				at.Status = 0
				at.Err = "no answer"
			}
			key := o.key
			if a.key != "" {
				key = a.key
			}
			at.Request = &history.Request{Method: "POST", URL: "http://api/charges", Key: key, NoKey: a.noKey, As: a.as}
			if a.id != "" {
				at.Fields = map[string]string{IDField: a.id}
				at.Body = fmt.Sprintf(`{"id":%q}`, a.id)
			}
			at.Fingerprint = fp(a.id + "|" + a.body)
			if a.body != "" {
				at.Body = a.body
			}
			if x := a.hidden; x != nil {
				hx := history.Answer{Hidden: true, Outcome: history.OK, Status: x.status, Fingerprint: fp(x.id + "|" + x.body)}
				if x.id != "" {
					hx.Fields = map[string]string{IDField: x.id}
				}
				at.Answers = append(at.Answers, hx)
			}
			h.Attempts = append(h.Attempts, at)
		}
	}
	if effects != nil {
		h.Readings = []history.Reading{{Oracle: id, Kind: history.KindEffects, Effects: effects}}
	}
	h.Readings = append(h.Readings, extra...)
	return h
}

func r(round int, role string) string { return Label(round, role, "") }

func TestContractChecks(t *testing.T) {
	first := func(round int, id string) ans { return ans{label: r(round, RoleFirst), status: 201, id: id} }
	copies := func(round, n int, role string, win ans, rest ans) []ans {
		out := []ans{}
		for i := 1; i <= n; i++ {
			a := rest
			if i == 1 {
				a = win
			}
			a.label = r(round, fmt.Sprintf("%s %d", role, i))
			out = append(out, a)
		}
		return out
	}
	tests := []struct {
		name    string
		check   string
		ops     []top
		effects map[string]int
		oracle  bool
		profile string
		mod     func(*history.Contract)
		want    Status
		sev     Severity // for a Fail
		says    string   // in the summary
	}{
		// C01 missing-key
		{name: "C01 rejected", check: "C01", ops: []top{{"k1", []ans{{label: RoleNoKey, status: 400, noKey: true}}}}, want: Pass},
		{name: "C01 processed", check: "C01", ops: []top{{"k1", []ans{{label: RoleNoKey, status: 201, id: "ch_1", noKey: true}}}}, want: Fail, sev: Medium, says: "processed"},
		{name: "C01 processed, stripe", check: "C01", profile: "stripe", ops: []top{{"k1", []ans{{label: RoleNoKey, status: 201, id: "ch_1", noKey: true}}}}, want: Pass},
		{name: "C01 5xx", check: "C01", ops: []top{{"k1", []ans{{label: RoleNoKey, status: 500, noKey: true}}}}, want: Fail, sev: High},
		// C02 key-format
		{name: "C02 rejected", check: "C02", ops: []top{
			{"", []ans{{label: KeyShapes[0].What, status: 400}}}, {"x300", []ans{{label: KeyShapes[1].What, status: 201, id: "a"}}},
			{"x500", []ans{{label: KeyShapes[2].What, status: 400}}}, {"t\tab", []ans{{label: KeyShapes[3].What, status: 400}}},
			{"k", []ans{{label: RoleQuoted, status: 201, id: "q", key: `"k"`}, {label: RoleRaw, status: 201, id: "q"}}}},
			want: Pass, says: "accepted (no length limit)"},
		{name: "C02 empty key accepted", check: "C02", ops: []top{
			{"", []ans{{label: KeyShapes[0].What, status: 201, id: "a"}}}, {"x300", []ans{{label: KeyShapes[1].What, status: 400}}},
			{"x500", []ans{{label: KeyShapes[2].What, status: 400}}}, {"t\tab", []ans{{label: KeyShapes[3].What, status: 400}}}},
			want: Fail, sev: Medium, says: "an empty key was accepted"},
		{name: "C02 5xx", check: "C02", ops: []top{
			{"", []ans{{label: KeyShapes[0].What, status: 400}}}, {"x300", []ans{{label: KeyShapes[1].What, status: 500}}},
			{"x500", []ans{{label: KeyShapes[2].What, status: 400}}}, {"t\tab", []ans{{label: KeyShapes[3].What, status: 400}}}},
			want: Fail, sev: High},
		{name: "C02 quoted and raw are two keys under draft", check: "C02", profile: "draft", ops: []top{
			{"", []ans{{label: KeyShapes[0].What, status: 400}}}, {"x300", []ans{{label: KeyShapes[1].What, status: 400}}},
			{"x500", []ans{{label: KeyShapes[2].What, status: 400}}}, {"t\tab", []ans{{label: KeyShapes[3].What, status: 400}}},
			{"k", []ans{{label: RoleQuoted, status: 201, id: "q1", key: `"k"`}, {label: RoleRaw, status: 201, id: "q2"}}}},
			want: Fail, sev: Medium, says: "two keys"},
		// C03 sequential-replay
		{name: "C03 replayed", check: "C03", oracle: true, effects: map[string]int{"k1": 1, "k2": 1}, ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleIdentical), status: 201, id: "ch_1"}}},
			{"k2", []ans{first(2, "ch_2"), {label: r(2, RoleIdentical), status: 201, id: "ch_2"}}}}, want: Pass, says: "1 effect per key"},
		{name: "C03 executed twice", check: "C03", oracle: true, effects: map[string]int{"k1": 2, "k2": 1}, ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleIdentical), status: 201, id: "ch_9"}}},
			{"k2", []ans{first(2, "ch_2"), {label: r(2, RoleIdentical), status: 201, id: "ch_2"}}}}, want: Fail, sev: Critical, says: "executed twice (2 effects)"},
		{name: "C03 executed twice, no oracle", check: "C03", ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleIdentical), status: 201, id: "ch_9"}}}}, want: Fail, sev: Critical, says: "judged from the answers alone"},
		{name: "C03 another resource, one effect", check: "C03", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleIdentical), status: 201, id: "ch_9"}}}}, want: Fail, sev: High, says: "a replay that names another resource"},
		{name: "C03 409 on an identical retry", check: "C03", ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleIdentical), status: 409}}}}, want: Fail, sev: High},
		{name: "C03 a success that did nothing", check: "C03", oracle: true, effects: map[string]int{"k1": 0}, ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleIdentical), status: 201, id: "ch_1"}}}}, want: Fail, sev: High, says: "no effect"},
		{name: "C03 effects not read", check: "C03", oracle: true, ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleIdentical), status: 201, id: "ch_1"}}}}, want: Unknown, says: "not read"},
		// C04 payload-mismatch
		{name: "C04 refused", check: "C04", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleMismatch), status: 422}}}}, want: Pass},
		{name: "C04 silent replay", check: "C04", ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleMismatch), status: 201, id: "ch_1"}}}}, want: Fail, sev: Medium, says: "silent replay"},
		{name: "C04 second execution", check: "C04", oracle: true, effects: map[string]int{"k1": 2}, ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleMismatch), status: 201, id: "ch_2"}}}}, want: Fail, sev: Critical},
		{name: "C04 another 4xx", check: "C04", ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleMismatch), status: 400}}}}, want: Fail, sev: Medium, says: "expects 422"},
		{name: "C04 400 under stripe", check: "C04", profile: "stripe", ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleMismatch), status: 400}}}}, want: Pass},
		// C05 equivalent-body
		{name: "C05 replayed", check: "C05", ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleReordered), status: 201, id: "ch_1"}, {label: r(1, RoleRespaced), status: 201, id: "ch_1"}}}}, want: Pass},
		{name: "C05 raw-byte fingerprint", check: "C05", ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleReordered), status: 422}}}}, want: Fail, sev: Medium, says: "raw bytes"},
		// C06 concurrent-same-key
		{name: "C06 one winner", check: "C06", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{
			{"k1", copies(1, 10, RoleCopy, ans{status: 201, id: "ch_1"}, ans{status: 409})}}, want: Pass},
		{name: "C06 charged twice", check: "C06", oracle: true, effects: map[string]int{"k1": 2}, ops: []top{
			{"k1", append(copies(1, 9, RoleCopy, ans{status: 201, id: "ch_1"}, ans{status: 409}), ans{label: r(1, "copy 10"), status: 201, id: "ch_2"})}},
			want: Fail, sev: Critical, says: "charged twice"},
		{name: "C06 two resources, no oracle", check: "C06", ops: []top{
			{"k1", append(copies(1, 9, RoleCopy, ans{status: 201, id: "ch_1"}, ans{status: 409}), ans{label: r(1, "copy 10"), status: 201, id: "ch_2"})}},
			want: Fail, sev: Critical, says: "judged from the answers alone"},
		{name: "C06 a 5xx loser", check: "C06", ops: []top{
			{"k1", copies(1, 4, RoleCopy, ans{status: 201, id: "ch_1"}, ans{status: 503})}}, want: Fail, sev: High},
		{name: "C06 a hang", check: "C06", ops: []top{
			{"k1", copies(1, 4, RoleCopy, ans{status: 201, id: "ch_1"}, ans{out: history.Info, expire: true})}}, want: Fail, sev: High, says: "a hang"},
		{name: "C06 no winner", check: "C06", ops: []top{
			{"k1", copies(1, 4, RoleCopy, ans{status: 409}, ans{status: 409})}}, want: Unknown, says: "no 2xx"},
		// C07 concurrent-mismatch
		{name: "C07 one processed", check: "C07", ops: []top{
			{"k1", copies(1, 4, RoleBody, ans{status: 201, id: "ch_1"}, ans{status: 422})}}, want: Pass},
		{name: "C07 both processed", check: "C07", ops: []top{
			{"k1", append(copies(1, 3, RoleBody, ans{status: 201, id: "ch_1"}, ans{status: 409}), ans{label: r(1, "body 4"), status: 201, id: "ch_2"})}},
			want: Fail, sev: Critical, says: "each processed"},
		// C08 409-is-retryable
		{name: "C08 retried to the answer", check: "C08", ops: []top{{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleCopyInFlight), status: 409},
			{label: r(1, RoleCopyRetried), status: 409}, {label: r(1, RoleCopyRetried), status: 201, id: "ch_1"}}}}, want: Pass},
		{name: "C08 stuck", check: "C08", ops: []top{{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleCopyInFlight), status: 409},
			{label: r(1, RoleCopyRetried), status: 409}}}}, want: Fail, sev: High, says: "stuck"},
		{name: "C08 nothing in flight", check: "C08", ops: []top{{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleCopyInFlight), status: 201, id: "ch_1"}}}},
			want: Skipped, says: "no copy was answered 409"},
		// C09 dropped-ack
		{name: "C09 hidden answer replayed", check: "C09", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "drop_ack", out: history.Info, hidden: &ans{status: 201, id: "ch_1"}}, {label: r(1, RoleRetry), status: 201, id: "ch_1"}}}},
			want: Pass},
		{name: "C09 executed again", check: "C09", oracle: true, effects: map[string]int{"k1": 2}, ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "drop_ack", out: history.Info, hidden: &ans{status: 201, id: "ch_1"}}, {label: r(1, RoleRetry), status: 201, id: "ch_2"}}}},
			want: Fail, sev: Critical},
		{name: "C09 stuck", check: "C09", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "drop_ack", out: history.Info, hidden: &ans{status: 201, id: "ch_1"}}, {label: r(1, RoleRetry), status: 409}}}},
			want: Fail, sev: High, says: "stuck"},
		// C10 timeout-in-flight
		{name: "C10 one effect", check: "C10", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", out: history.Info}, {label: r(1, RoleImmediate), status: 409}, {label: r(1, RoleImmediate), status: 201, id: "ch_1"},
			{label: r(1, RoleLater), status: 201, id: "ch_1"}}}}, want: Pass},
		{name: "C10 executed twice", check: "C10", oracle: true, effects: map[string]int{"k1": 2}, ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", out: history.Info}, {label: r(1, RoleImmediate), status: 201, id: "ch_2"},
			{label: r(1, RoleLater), status: 201, id: "ch_2"}}}}, want: Fail, sev: Critical, says: "2 effects"},
		{name: "C10 two resources, no oracle", check: "C10", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", out: history.Info}, {label: r(1, RoleImmediate), status: 201, id: "ch_2"},
			{label: r(1, RoleLater), status: 201, id: "ch_1"}}}}, want: Fail, sev: Critical},
		{name: "C10 the answers cannot tell", check: "C10", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", out: history.Info}, {label: r(1, RoleImmediate), status: 409}, {label: r(1, RoleImmediate), status: 201, id: "ch_1"},
			{label: r(1, RoleLater), status: 201, id: "ch_1"}}}}, want: Unknown, says: "the abandoned request's answer was lost"},
		// A retry answered the replay at once met nothing in flight: one
		// effect proves nothing about the overlap, and is no pass.
		{name: "C10 the retry came after the first ended", check: "C10", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", out: history.Info, start: 0, end: 10 * time.Millisecond},
			{label: r(1, RoleImmediate), status: 201, id: "ch_1", start: 20 * time.Millisecond, end: 21 * time.Millisecond},
			{label: r(1, RoleLater), status: 201, id: "ch_1"}}}}, want: Skipped, says: "ended before its retry arrived"},
		// ... but a second effect is a failure, overlap shown or not.
		{name: "C10 executed twice, no overlap shown", check: "C10", oracle: true, effects: map[string]int{"k1": 2}, ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", out: history.Info, start: 0, end: 10 * time.Millisecond},
			{label: r(1, RoleImmediate), status: 201, id: "ch_2", start: 20 * time.Millisecond, end: 21 * time.Millisecond},
			{label: r(1, RoleLater), status: 201, id: "ch_2"}}}}, want: Fail, sev: Critical, says: "2 effects"},
		// A server that holds the retry until the first ends: the retry
		// waited half the first's time or more.
		{name: "C10 the retry held", check: "C10", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", out: history.Info, start: 0, end: 10 * time.Millisecond},
			{label: r(1, RoleImmediate), status: 201, id: "ch_1", start: 12 * time.Millisecond, end: 19 * time.Millisecond},
			{label: r(1, RoleLater), status: 201, id: "ch_1"}}}}, want: Pass, says: "1 of 1"},
		{name: "C10 no overlap", check: "C10", mod: func(c *history.Contract) { c.Checks[0].Cut = 3 * time.Millisecond }, ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", status: 201, id: "ch_1"}}}}, want: Skipped, says: "within 3ms"},
		// C11 reset-before-send
		{name: "C11 processed once", check: "C11", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "reset", out: history.Fail}, {label: r(1, RoleRetry), status: 201, id: "ch_1"}}}}, want: Pass},
		{name: "C11 a lying success", check: "C11", oracle: true, effects: map[string]int{"k1": 0}, ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "reset", out: history.Fail}, {label: r(1, RoleRetry), status: 201, id: "ch_1"}}}}, want: Fail, sev: High, says: "no effect"},
		// C12 error-caching
		{name: "C12 re-executed as declared", check: "C12", mod: func(c *history.Contract) { c.Errors = ErrorsReExecuted }, ops: []top{{"k1", []ans{
			{label: r(1, RoleErrorBody), status: 402}, {label: r(1, RoleNormal), status: 201, id: "ch_1"}}}}, want: Pass, says: "as declared"},
		{name: "C12 not the declared policy", check: "C12", mod: func(c *history.Contract) { c.Errors = ErrorsCached }, ops: []top{{"k1", []ans{
			{label: r(1, RoleErrorBody), status: 402}, {label: r(1, RoleNormal), status: 201, id: "ch_1"}}}}, want: Fail, sev: Medium},
		{name: "C12 an effect of the error", check: "C12", oracle: true, effects: map[string]int{"k1": 2}, ops: []top{{"k1", []ans{
			{label: r(1, RoleErrorBody), status: 402}, {label: r(1, RoleNormal), status: 201, id: "ch_1"}}}}, want: Fail, sev: Critical},
		// C13 stuck-in-flight
		{name: "C13 answered within the lease", check: "C13", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", out: history.Info}, {label: r(1, RoleRetry), status: 409}, {label: r(1, RoleRetry), status: 201, id: "ch_1"}}}},
			want: Pass},
		{name: "C13 nothing abandoned", check: "C13", mod: func(c *history.Contract) { c.Checks[0].Cut = 3 * time.Millisecond }, ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", status: 201, id: "ch_1"}, {label: r(1, RoleRetry), status: 201, id: "ch_1"}}}},
			want: Skipped, says: "nothing was left in flight"},
		{name: "C13 answered in time, then abandoned", check: "C13", ops: []top{
			{"k1", []ans{{label: r(1, RoleFirst), fault: "timeout", status: 201, id: "ch_1"}, {label: r(1, RoleRetry), status: 201, id: "ch_1"}}},
			{"k2", []ans{{label: r(1, RoleFirst), fault: "timeout", out: history.Info}, {label: r(1, RoleRetry), status: 409}, {label: r(1, RoleRetry), status: 201, id: "ch_2"}}}},
			want: Pass, says: "1 request abandoned"},
		// A first answered in time that left its key in flight: stuck all
		// the same, abandoned or not (the no-cache-skips bug).
		{name: "C13 answered, and stuck", check: "C13", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", status: 200, start: 0}, {label: r(1, RoleRetry), status: 409, end: 5 * time.Second}}}},
			want: Fail, sev: High, says: "stuck in flight"},
		{name: "C13 stuck", check: "C13", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), fault: "timeout", out: history.Info, start: 0}, {label: r(1, RoleRetry), status: 409, end: 5 * time.Second}}}},
			want: Fail, sev: High, says: "stuck in flight"},
		// C14 expiry
		{name: "C14 replayed, then new", check: "C14", mod: func(c *history.Contract) { c.Retention = time.Second }, ops: []top{{"k1", []ans{
			first(0, "ch_1"), {label: r(0, RoleWithin), status: 201, id: "ch_1"}, {label: r(0, RolePast), status: 201, id: "ch_2"}}}}, want: Pass},
		{name: "C14 expired early", check: "C14", mod: func(c *history.Contract) { c.Retention = time.Second }, ops: []top{{"k1", []ans{
			first(0, "ch_1"), {label: r(0, RoleWithin), status: 201, id: "ch_2"}, {label: r(0, RolePast), status: 201, id: "ch_3"}}}},
			want: Fail, sev: Critical},
		{name: "C14 kept past the retention", check: "C14", mod: func(c *history.Contract) { c.Retention = time.Second }, ops: []top{{"k1", []ans{
			first(0, "ch_1"), {label: r(0, RoleWithin), status: 201, id: "ch_1"}, {label: r(0, RolePast), status: 201, id: "ch_1"}}}},
			want: Fail, sev: Info},
		// C15 cross-user
		{name: "C15 each processed", check: "C15", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirstUser), status: 201, id: "ch_1"}, {label: r(1, RoleSecondUser), status: 201, id: "ch_2"}}}}, want: Pass},
		{name: "C15 a leak", check: "C15", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirstUser), status: 201, id: "ch_1"}, {label: r(1, RoleSecondUser), status: 201, id: "ch_1"}}}},
			want: Fail, sev: Critical, says: "data leak"},
		{name: "C15 not scoped", check: "C15", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirstUser), status: 201, id: "ch_1"}, {label: r(1, RoleSecondUser), status: 409}}}}, want: Fail, sev: Medium},
		{name: "C15 refused: check --as", check: "C15", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirstUser), status: 201, id: "ch_1"}, {label: r(1, RoleSecondUser), status: 401}}}}, want: Unknown, says: "check --as"},
		// C16 cross-endpoint
		{name: "C16 scoped", check: "C16", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{{"k1", []ans{
			first(1, "ch_1"), {label: r(1, RoleQuery), status: 201, id: "ch_1"}, {label: r(1, RoleSibling), status: 404}}}}, want: Pass},
		{name: "C16 the sibling replays", check: "C16", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{{"k1", []ans{
			first(1, "ch_1"), {label: r(1, RoleQuery), status: 201, id: "ch_1"}, {label: r(1, RoleSibling), status: 201, id: "ch_1"}}}},
			want: Fail, sev: High, says: "not scoped per endpoint"},
		{name: "C16 the query executes again", check: "C16", oracle: true, effects: map[string]int{"k1": 2}, ops: []top{{"k1", []ans{
			first(1, "ch_1"), {label: r(1, RoleQuery), status: 201, id: "ch_2"}, {label: r(1, RoleSibling), status: 404}}}},
			want: Fail, sev: Critical},
		// C17 replay-fidelity
		{name: "C17 faithful", check: "C17", ops: []top{{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleReplay), status: 201, id: "ch_1"}}}}, want: Pass},
		{name: "C17 another body", check: "C17", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), status: 201, id: "ch_1", body: `{"id":"ch_1","n":1}`},
			{label: r(1, RoleReplay), status: 201, id: "ch_1", body: `{"id":"ch_1","n":2}`}}}}, want: Fail, sev: High, says: "n changed"},
		{name: "C17 another Content-Type", check: "C17", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirst), status: 201, id: "ch_1", hdr: map[string]string{"Content-Type": "application/json"}},
			{label: r(1, RoleReplay), status: 201, id: "ch_1", hdr: map[string]string{"Content-Type": "text/plain"}}}}}, want: Fail, sev: Medium},
		{name: "C17 no marker under stripe", check: "C17", profile: "stripe", ops: []top{{"k1", []ans{
			first(1, "ch_1"), {label: r(1, RoleReplay), status: 201, id: "ch_1"}}}}, want: Fail, sev: Medium, says: "Idempotent-Replayed"},
		{name: "C17 marked under stripe", check: "C17", profile: "stripe", ops: []top{{"k1", []ans{
			first(1, "ch_1"), {label: r(1, RoleReplay), status: 201, id: "ch_1", hdr: map[string]string{"Idempotent-Replayed": "true"}}}}}, want: Pass},
		// C18 safe-method
		{name: "C18 key ignored", check: "C18", ops: []top{{"k1", []ans{{label: RoleGetWithKey, status: 405}, {label: RoleGetWithoutKey, status: 405}}}}, want: Pass},
		{name: "C18 key not ignored", check: "C18", ops: []top{{"k1", []ans{{label: RoleGetWithKey, status: 400}, {label: RoleGetWithoutKey, status: 405}}}},
			want: Fail, sev: Medium},
		// DK distinct-keys
		{name: "DK two operations", check: "DK", oracle: true, effects: map[string]int{"k1": 1, "k2": 1}, ops: []top{
			{"k1", []ans{{label: r(1, RoleFirstKey), status: 201, id: "ch_1"}}}, {"k2", []ans{{label: r(1, RoleNewKey), status: 201, id: "ch_2"}}}}, want: Pass},
		{name: "DK dedup by content", check: "DK", ops: []top{
			{"k1", []ans{{label: r(1, RoleFirstKey), status: 201, id: "ch_1"}}}, {"k2", []ans{{label: r(1, RoleNewKey), status: 201, id: "ch_1"}}}},
			want: Fail, sev: High, says: "dedup by content"},
		// A probe that sent nothing is never a pass.
		{name: "nothing sent", check: "C03", want: Unknown, says: "sent no request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prof := tt.profile
			if prof == "" {
				prof = "draft"
			}
			h := contractHistory(tt.check, tt.ops, tt.effects, tt.oracle, prof, tt.mod)
			sc := JudgeContract(h)
			if len(sc.Checks) != 1 {
				t.Fatalf("JudgeContract gave %d checks, want 1", len(sc.Checks))
			}
			c := sc.Checks[0]
			if c.Result != tt.want || (tt.want == Fail && c.Severity != tt.sev) {
				t.Errorf("%s = %s %s (%s), want %s %s", tt.check, c.Result, c.Severity, c.Summary, tt.want, tt.sev)
			}
			if tt.says != "" && !strings.Contains(c.Summary, tt.says) {
				t.Errorf("%s summary = %q, want it to say %q", tt.check, c.Summary, tt.says)
			}
			if c.Result == Fail && len(c.Evidence) == 0 {
				t.Errorf("%s failed without evidence", tt.check)
			}
			if c.Result != Skipped && c.JudgedBy == "" {
				t.Errorf("%s does not say how it judged", tt.check)
			}
		})
	}
}

// Every contract check is exercised above, passing and failing.
func TestContractChecksCovered(t *testing.T) {
	for _, c := range ContractChecks() {
		if c.ID == "" || c.Name == "" || c.Severity.Rank() == 0 {
			t.Errorf("contract check %+v lacks an id, a name or a severity", c)
		}
	}
	if n := len(ContractChecks()); n != 25 {
		t.Errorf("%d contract checks, want 25 (C01–C18, DK, C24–C28 and W01)", n)
	}
}

func TestDecideContract(t *testing.T) {
	cs := func(l ...ContractCheck) []ContractCheck { return l }
	cases := []struct {
		checks      []ContractCheck
		failOn      string
		interrupted bool
		want        Result
	}{
		{cs(ContractCheck{Result: Pass}, ContractCheck{Result: Skipped}), "", false, Met},
		{cs(ContractCheck{Result: Fail, Severity: Medium}), "", false, Met},
		{cs(ContractCheck{Result: Fail, Severity: Medium}), "medium", false, NotMet},
		{cs(ContractCheck{Result: Fail, Severity: Info}), "medium", false, Met},
		{cs(ContractCheck{Result: Fail, Severity: High}, ContractCheck{Result: Unknown}), "", false, NotMet},
		{cs(ContractCheck{Result: Unknown}, ContractCheck{Result: Skipped}), "", false, Inconclusive},
		{cs(), "", false, Inconclusive},
		{cs(ContractCheck{Result: Pass}), "", true, Inconclusive},
		{cs(ContractCheck{Result: Fail, Severity: Critical}), "", true, NotMet},
	}
	for i, c := range cases {
		if got, why := decideContract(c.checks, c.failOn, c.interrupted); got != c.want || why == "" {
			t.Errorf("case %d: decideContract = %s (%q), want %s", i, got, why, c.want)
		}
	}
}

func TestIdentity(t *testing.T) {
	at := func(id, loc string, fpv string) *history.Attempt {
		a := &history.Attempt{Fingerprint: fp(fpv)}
		if id != "" {
			a.Fields = map[string]string{IDField: id}
		}
		if loc != "" {
			a.Headers = map[string]string{"Location": loc}
		}
		return a
	}
	if identity(at("ch_1", "", "x")) != identity(at("ch_1", "", "y")) {
		t.Error("same id, other bodies: different identities")
	}
	if identity(at("ch_1", "", "x")) == identity(at("ch_2", "", "x")) {
		t.Error("different ids: same identity")
	}
	if identity(at("", "/r/1", "x")) == identity(at("", "/r/2", "x")) {
		t.Error("different Locations: same identity")
	}
	if x1, x2 := identity(at("", "", "x")), identity(at("", "", "x")); x1 != x2 || x1 == identity(at("", "", "y")) {
		t.Error("identity by body: wrong")
	}
}

func TestLabelRole(t *testing.T) {
	for _, tc := range []struct{ label, role string }{
		{Label(2, RoleFirst, "abandoned after 2ms"), RoleFirst},
		{Label(0, RoleRetry, ""), RoleRetry},
		{Label(3, RoleMismatch, ""), RoleMismatch},
		{"round 1: copy 3", "copy 3"},
	} {
		if got := Role(tc.label); got != tc.role {
			t.Errorf("Role(%q) = %q, want %q", tc.label, got, tc.role)
		}
	}
	if roundOf(Label(2, RoleFirst, "x")) != 2 || roundOf(Label(0, RoleFirst, "")) != 0 {
		t.Error("roundOf")
	}
}
