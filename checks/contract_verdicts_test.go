package checks

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// The verdicts of issue 19 on hand-written audits: the new checks on keys
// (C24–C27), C06's adaptive rounds, and the verdicts fixed (C02 under a
// profile that needs no key, C02's quoted and raw forms counted both,
// C04/C07's original sent again, C12's burnt key, C14's concurrent
// requests past the retention, C15 by the oracle and a wrapped replay).
// Each broken history must be accused as the contract says (removing the
// accusation fails the test), each correct one must pass.

// verdict is one hand-written audit of one check and what it must give.
type verdict struct {
	name    string
	check   string
	ops     []top
	effects map[string]int
	extra   []history.Reading
	oracle  bool
	profile string
	mod     func(*history.Contract)
	want    Status
	sev     Severity // for a Fail
	says    []string // in the summary
	not     string   // never in the summary
}

func judgeVerdicts(t *testing.T, cases []verdict) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			prof := tt.profile
			if prof == "" {
				prof = "draft"
			}
			sc := JudgeContract(contractHistory(tt.check, tt.ops, tt.effects, tt.oracle, prof, tt.mod, tt.extra...))
			c := sc.Checks[0]
			if c.Result != tt.want || (tt.want == Fail && c.Severity != tt.sev) {
				t.Errorf("%s = %s %s (%s), want %s %s", tt.check, c.Result, c.Severity, c.Summary, tt.want, tt.sev)
			}
			for _, s := range tt.says {
				if !strings.Contains(c.Summary, s) {
					t.Errorf("%s summary = %q, want it to say %q", tt.check, c.Summary, s)
				}
			}
			if tt.not != "" && strings.Contains(c.Summary, tt.not) {
				t.Errorf("%s summary = %q, must not say %q", tt.check, c.Summary, tt.not)
			}
			if c.Result == Fail && len(c.Evidence) == 0 {
				t.Errorf("%s failed without evidence", tt.check)
			}
			// The judgement is a pure function of the history: judged
			// again, the same.
			again := JudgeContract(contractHistory(tt.check, tt.ops, tt.effects, tt.oracle, prof, tt.mod, tt.extra...)).Checks[0]
			if again.Summary != c.Summary || again.Result != c.Result {
				t.Errorf("%s judged twice: %q, then %q", tt.check, c.Summary, again.Summary)
			}
		})
	}
}

// msec is a time offset in milliseconds.
func msec(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// c02 is C02's malformed keys answered so, then the quoted and raw forms.
func c02(empty, tab int, quoted, raw ans) []top {
	shape := func(i, status int) ans {
		a := ans{label: KeyShapes[i].What, status: status}
		if status < 300 {
			a.id = fmt.Sprintf("s%d", i)
		}
		return a
	}
	out := []top{{"", []ans{shape(0, empty)}}, {"x300", []ans{shape(1, 400)}}, {"x500", []ans{shape(2, 400)}}, {"t\tab", []ans{shape(3, tab)}}}
	if quoted.label != "" {
		quoted.key = `"k"`
		out = append(out, top{"k", []ans{quoted, raw}})
	}
	return out
}

func quotedReading(n int) history.Reading {
	return history.Reading{Oracle: QuotedReading, Kind: history.KindEffects, Effects: map[string]int{`"k"`: n}}
}

func TestVerdictsFixed(t *testing.T) {
	first := func(round int, id string) ans { return ans{label: r(round, RoleFirst), status: 201, id: id} }
	quoted := func(id string) ans { return ans{label: RoleQuoted, status: 201, id: id} }
	raw := func(id string) ans { return ans{label: RoleRaw, status: 201, id: id} }
	judgeVerdicts(t, []verdict{
		// C02 honours the profile: a profile that processes a request
		// without a key does not require one.
		{name: "C02 empty and tab keys processed under powertools", check: "C02", profile: "powertools", ops: c02(201, 201, ans{}, ans{}),
			want: Pass, says: []string{"as the powertools profile allows"}, not: "accepted ("},
		{name: "C02 empty and tab keys processed under stripe", check: "C02", profile: "stripe", ops: c02(201, 201, ans{}, ans{}), want: Pass},
		{name: "C02 a tab key processed under draft", check: "C02", ops: c02(400, 201, ans{}, ans{}), want: Fail, sev: Medium, says: []string{"a key with a tab inside was accepted"}},
		// C02's quoted and raw forms: both forms' effects counted; two ids
		// are two keys whatever the raw form's count.
		{name: "C02 two ids, the raw form counted once, the quoted form once", check: "C02", oracle: true, effects: map[string]int{"k": 1},
			extra: []history.Reading{quotedReading(1)}, ops: c02(400, 400, quoted("ch_1"), raw("ch_2")),
			want: Fail, sev: Medium, says: []string{"two keys", "2 effects: 1 under the raw form, 1 under the quoted one"}, not: "name one key"},
		{name: "C02 two ids, the quoted form unread", check: "C02", oracle: true, effects: map[string]int{"k": 1},
			ops: c02(400, 400, quoted("ch_1"), raw("ch_2")), want: Fail, sev: Medium, says: []string{"two resources: id ch_1, then id ch_2"}, not: "name one key"},
		{name: "C02 one id, one effect in all", check: "C02", oracle: true, effects: map[string]int{"k": 1},
			extra: []history.Reading{quotedReading(0)}, ops: c02(400, 400, quoted("ch_1"), raw("ch_1")), want: Pass, says: []string{"name one key"}},
		{name: "C02 one id in the answers, but an effect under each form", check: "C02", oracle: true, effects: map[string]int{"k": 1},
			extra: []history.Reading{quotedReading(1)}, ops: c02(400, 400, quoted("ch_1"), raw("ch_1")), want: Fail, sev: Medium, says: []string{"2 effects"}},
		{name: "C02 bodies differ without ids, one effect in all", check: "C02", oracle: true, effects: map[string]int{"k": 1},
			extra: []history.Reading{quotedReading(0)}, ops: c02(400, 400, ans{label: RoleQuoted, status: 201, body: `{"n":1}`}, ans{label: RoleRaw, status: 201, body: `{"n":2}`}),
			want: Pass, says: []string{"name one key"}},
		{name: "C02 two ids under stripe: opaque keys", check: "C02", profile: "stripe", ops: c02(400, 400, quoted("ch_1"), raw("ch_2")),
			want: Pass, says: []string{"two keys (opaque keys"}},

		// C04 sends the original again after the mismatch.
		{name: "C04 the mismatch replaced the stored answer", check: "C04", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleMismatch), status: 422}, {label: r(1, RoleOriginal), status: 422}}}},
			want: Fail, sev: High, says: []string{"the original request sent again after another body was answered 422, not the first answer (201)"}},
		{name: "C04 the original again gets its answer", check: "C04", oracle: true, effects: map[string]int{"k1": 1}, ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleMismatch), status: 422}, {label: r(1, RoleOriginal), status: 201, id: "ch_1"}}}},
			want: Pass, says: []string{"the processed request got its first answer"}},
		{name: "C04 the original again executes again", check: "C04", oracle: true, effects: map[string]int{"k1": 2}, ops: []top{
			{"k1", []ans{first(1, "ch_1"), {label: r(1, RoleMismatch), status: 422}, {label: r(1, RoleOriginal), status: 201, id: "ch_2"}}}},
			want: Fail, sev: Critical},

		// C07 sends the processed body again after the round.
		{name: "C07 a losing body's refusal replaced the stored answer", check: "C07", ops: []top{{"k1", []ans{
			{label: r(1, "body 1"), status: 201, id: "ch_1"}, {label: r(1, "body 2"), status: 422}, {label: r(1, "body 3"), status: 409}, {label: r(1, "body 4"), status: 422},
			{label: Label(1, RoleWinnerAgain, "body 1"), status: 422}}}},
			want: Fail, sev: High, says: []string{"the processed body sent again after the round was answered 422"}},
		{name: "C07 the processed body again gets its answer", check: "C07", ops: []top{{"k1", []ans{
			{label: r(1, "body 1"), status: 409}, {label: r(1, "body 2"), status: 201, id: "ch_1"}, {label: r(1, "body 3"), status: 409}, {label: r(1, "body 4"), status: 422},
			{label: Label(1, RoleWinnerAgain, "body 2"), status: 201, id: "ch_1"}}}},
			want: Pass, says: []string{"4 different bodies", "got its first answer"}},

		// C12 tells a replayed failure from a burnt key.
		{name: "C12 a burnt key", check: "C12", mod: func(c *history.Contract) { c.Errors = ErrorsCached }, ops: []top{{"k1", []ans{
			{label: r(1, RoleErrorBody), status: 402, body: `{"error":"card_declined"}`},
			{label: r(1, RoleNormal), status: 412, body: `{"error":"key used"}`}, {label: r(1, RoleNormal), status: 412, body: `{"error":"key used"}`},
			{label: r(1, RoleNormal), status: 412, body: `{"error":"key used"}`}}}},
			want: Fail, sev: High, says: []string{"the key is burnt", "412 to each of its 3 tries"}, not: "errors are cached"},
		{name: "C12 a burnt key, no policy declared", check: "C12", ops: []top{{"k1", []ans{
			{label: r(1, RoleErrorBody), status: 400, body: `{"error":"amount"}`}, {label: r(1, RoleNormal), status: 400, body: `{"error":"key used"}`}}}},
			want: Fail, sev: High, says: []string{"burnt"}},
		{name: "C12 the error replayed", check: "C12", mod: func(c *history.Contract) { c.Errors = ErrorsCached }, ops: []top{{"k1", []ans{
			{label: r(1, RoleErrorBody), status: 402, body: `{"error":"card_declined"}`}, {label: r(1, RoleNormal), status: 402, body: `{"error":"card_declined"}`}}}},
			want: Pass, says: []string{"errors are cached (the error replayed), as declared"}},
		{name: "C12 the corrected body refused as a mismatch", check: "C12", ops: []top{{"k1", []ans{
			{label: r(1, RoleErrorBody), status: 402, body: `{"error":"card_declined"}`}, {label: r(1, RoleNormal), status: 422, body: `{"error":"mismatch"}`}}}},
			want: Pass, says: []string{"the corrected body refused 422"}},
		{name: "C12 released on a later try", check: "C12", mod: func(c *history.Contract) { c.Errors = ErrorsReExecuted }, ops: []top{{"k1", []ans{
			{label: r(1, RoleErrorBody), status: 402}, {label: r(1, RoleNormal), status: 409}, {label: r(1, RoleNormal), status: 201, id: "ch_1"}}}},
			want: Pass, says: []string{"processed on the second retry"}},

		// C14 sends concurrent requests just past the retention.
		{name: "C14 two executions past the retention (answers)", check: "C14", mod: func(c *history.Contract) { c.Retention = time.Second }, ops: []top{{"k1", []ans{
			first(0, "ch_1"), {label: r(0, RoleWithin), status: 201, id: "ch_1"},
			{label: Label(0, RolePast, "copy 1"), status: 201, id: "ch_2"}, {label: Label(0, RolePast, "copy 2"), status: 201, id: "ch_3"},
			{label: Label(0, RolePast, "copy 3"), status: 409}, {label: Label(0, RolePast, "copy 4"), status: 409}}}},
			want: Fail, sev: Critical, says: []string{"2 new resources"}},
		{name: "C14 two executions past the retention (effects)", check: "C14", oracle: true, effects: map[string]int{"k1": 3},
			mod: func(c *history.Contract) { c.Retention = time.Second }, ops: []top{{"k1", []ans{
				first(0, "ch_1"), {label: r(0, RoleWithin), status: 201, id: "ch_1"},
				{label: Label(0, RolePast, "copy 1"), status: 201, id: "ch_2"}, {label: Label(0, RolePast, "copy 2"), status: 201, id: "ch_2"},
				{label: Label(0, RolePast, "copy 3"), status: 409}, {label: Label(0, RolePast, "copy 4"), status: 201, id: "ch_2"}}}},
			want: Fail, sev: Critical, says: []string{"executed 2 times (3 effects in all)"}},
		{name: "C14 once past the retention", check: "C14", oracle: true, effects: map[string]int{"k1": 2},
			mod: func(c *history.Contract) { c.Retention = time.Second }, ops: []top{{"k1", []ans{
				first(0, "ch_1"), {label: r(0, RoleWithin), status: 201, id: "ch_1"},
				{label: Label(0, RolePast, "copy 1"), status: 201, id: "ch_2"}, {label: Label(0, RolePast, "copy 2"), status: 409},
				{label: Label(0, RolePast, "copy 3"), status: 409}, {label: Label(0, RolePast, "copy 4"), status: 201, id: "ch_2"}}}},
			want: Pass, says: []string{"once for 4 concurrent requests"}},

		// C15 judges by the oracle, and finds a wrapped replay without one.
		{name: "C15 a wrapped replay of the first's answer", check: "C15", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirstUser), status: 201, id: "ch_1"},
			{label: r(1, RoleSecondUser), status: 200, body: `{"cached":true,"data":{"id":"ch_1","amount":100}}`}}}},
			want: Fail, sev: Critical, says: []string{"data leak"}},
		{name: "C15 one effect for both principals, whatever the answer", check: "C15", oracle: true, effects: map[string]int{"k1": 1, "own": 1}, ops: []top{
			{"k1", []ans{{label: r(1, RoleFirstUser), status: 201, id: "ch_1"}, {label: r(1, RoleSecondUser), status: 200, body: `{"ok":true}`}}},
			{"own", []ans{{label: RoleOwnKey, status: 201, id: "ch_7", as: true}}}},
			want: Fail, sev: Critical, says: []string{"the oracle counts 1 effect for the key both principals sent"}},
		{name: "C15 two effects: each processed", check: "C15", oracle: true, effects: map[string]int{"k1": 2, "own": 1}, ops: []top{
			{"k1", []ans{{label: r(1, RoleFirstUser), status: 201, id: "ch_1"}, {label: r(1, RoleSecondUser), status: 201, id: "ch_2"}}},
			{"own", []ans{{label: RoleOwnKey, status: 201, id: "ch_7", as: true}}}},
			want: Pass, says: []string{"2 effects per key"}},
		{name: "C15 an oracle blind to the second principal", check: "C15", oracle: true, effects: map[string]int{"k1": 1, "own": 0}, ops: []top{
			{"k1", []ans{{label: r(1, RoleFirstUser), status: 201, id: "ch_1"}, {label: r(1, RoleSecondUser), status: 201, id: "ch_2"}}},
			{"own", []ans{{label: RoleOwnKey, status: 201, id: "ch_7", as: true}}}},
			want: Pass, says: []string{"the oracle does not count the second principal's effects"}},
		{name: "C15 the same id with another body", check: "C15", ops: []top{{"k1", []ans{
			{label: r(1, RoleFirstUser), status: 201, id: "ch_1"},
			{label: r(1, RoleSecondUser), status: 200, id: "ch_1", body: `{"id":"ch_1","cached":true}`}}}},
			want: Fail, sev: Critical, says: []string{"data leak"}},
	})
}

// c06Round is a round of n concurrent copies: the winner answered 201 at
// 20 ms, the others as rest (their sends spread over spread).
func c06Round(round, n int, spread time.Duration, rest ans) []ans {
	out := []ans{}
	for i := 1; i <= n; i++ {
		a := rest
		a.start = spread * time.Duration(i-1) / time.Duration(max(n-1, 1))
		a.end = a.start + msec(1)
		if i == 1 {
			a = ans{status: 201, id: "ch_1", start: 0, end: msec(20)}
		} else if a.status == 201 {
			a.end = msec(21)
		}
		a.label = r(round, fmt.Sprintf("%s %d", RoleCopy, i))
		out = append(out, a)
	}
	return out
}

func TestRaceRounds(t *testing.T) {
	at := func(as []ans) []*history.Attempt {
		h := contractHistory("C06", []top{{"k", as}}, nil, false, "draft", nil)
		out := []*history.Attempt{}
		for i := range h.Attempts {
			out = append(out, &h.Attempts[i])
		}
		return out
	}
	for _, tc := range []struct {
		name string
		as   []ans
		more bool
	}{
		{"the others refused in flight", c06Round(1, 10, msec(0.2), ans{status: 409}), false},
		{"a copy in flight got the winner's answer", c06Round(1, 10, msec(0.2), ans{status: 201, id: "ch_1"}), true},
		{"no 2xx", []ans{{label: "round 1: copy 1", status: 409}, {label: "round 1: copy 2", status: 409}}, true},
		{"a copy without an answer", append(c06Round(1, 3, msec(0.2), ans{status: 409}), ans{label: "round 1: copy 4", out: history.Info}), true},
		{"sends spread wider than the winner's flight, some overlapping", c06Round(1, 10, msec(30), ans{status: 409}), false},
		{"every other copy sent after the winner's answer", []ans{{label: "round 1: copy 1", status: 201, id: "ch_1", end: msec(20)},
			{label: "round 1: copy 2", status: 201, id: "ch_1", start: msec(21), end: msec(22)}}, true},
		{"two resources: found", append(c06Round(1, 3, msec(0.2), ans{status: 409}), ans{label: "round 1: copy 4", status: 201, id: "ch_2", end: msec(20)}), false},
	} {
		if got := RaceRound(at(tc.as)); got != tc.more {
			t.Errorf("%s: RaceRound = %v, want %v", tc.name, got, tc.more)
		}
	}
	if got, synced := Spread(at(c06Round(1, 10, msec(0.9), ans{status: 409}))); got != msec(0.9) || synced {
		t.Errorf("Spread = %v, %v; want 900µs, not synced", got, synced)
	}
	held := at(c06Round(1, 10, msec(0.9), ans{status: 409}))
	for _, e := range held {
		e.Synced = 12 * time.Microsecond
	}
	if got, synced := Spread(held); got != 12*time.Microsecond || !synced {
		t.Errorf("Spread of copies held to their last byte = %v, %v; want 12µs, synced", got, synced)
	}
	// The judge says how many rounds asked for more, and the spread.
	var ops []top
	for round := 1; round <= 6; round++ {
		rest := ans{status: 409}
		if round == 2 {
			rest = ans{status: 201, id: "ch_1"}
		}
		ops = append(ops, top{fmt.Sprintf("k%d", round), c06Round(round, 10, msec(0.3), rest)})
	}
	effects := map[string]int{"k1": 1, "k2": 1, "k3": 1, "k4": 1, "k5": 1, "k6": 1}
	judgeVerdicts(t, []verdict{{name: "C06 six rounds, one near a race", check: "C06", oracle: true, effects: effects, ops: ops, want: Pass,
		says: []string{"6 rounds of 10", "1 of 6 rounds were inconclusive or near a race", "spread over 300µs (median round)"}}})
}

// c24 is C24's audit: len(after) first keys, then fresh keys, the i-th
// first key retried (answered retry(i)) once after[i] other keys were
// first sent after it (the later first keys included).
func c24(after []int, retry func(i int) ans) []top {
	m := len(after)
	t := 0.0
	tick := func() (time.Duration, time.Duration) { t++; return msec(t), msec(t + 0.5) }
	firsts := make([]ans, m)
	for i := range firsts {
		s, e := tick()
		firsts[i] = ans{label: r(i+1, RoleFirst), status: 201, id: fmt.Sprintf("ch_f%d", i+1), start: s, end: e}
	}
	var ops, floods []top
	for i, n := range after {
		for len(floods) < n-(m-1-i) {
			s, e := tick()
			floods = append(floods, top{fmt.Sprintf("x%d", len(floods)), []ans{{label: RoleFlood, status: 201, id: fmt.Sprintf("ch_x%d", len(floods)), start: s, end: e}}})
		}
		rt := retry(i)
		rt.label = Label(i+1, RoleRetry, fmt.Sprintf("after %d fresh keys", n))
		rt.start, rt.end = tick()
		ops = append(ops, top{fmt.Sprintf("f%d", i+1), []ans{firsts[i], rt}})
	}
	return append(ops, floods...)
}

func TestVerdictsOnKeys(t *testing.T) {
	replay := func(i int) ans { return ans{status: 201, id: fmt.Sprintf("ch_f%d", i+1)} }
	judgeVerdicts(t, []verdict{
		// C24 retention by count.
		{name: "C24 replayed after every checkpoint", check: "C24", oracle: true, effects: map[string]int{"f1": 1, "f2": 1, "f3": 1, "f4": 1},
			ops: c24([]int{5, 10, 20, 40}, replay), want: Pass, says: []string{"still replayed after 40 other keys", "1 effect per key"}},
		{name: "C24 executed again after 20 keys", check: "C24", oracle: true, effects: map[string]int{"f1": 1, "f2": 1, "f3": 2},
			ops: c24([]int{5, 10, 20}, func(i int) ans {
				if i == 2 {
					return ans{status: 201, id: "ch_new"}
				}
				return replay(i)
			}), want: Fail, sev: Critical, says: []string{"after 20 other keys", "executed twice (2 effects)", "after 10 it was still replayed"}},
		{name: "C24 executed again, judged from the answers", check: "C24",
			ops: c24([]int{5, 10}, func(i int) ans {
				if i == 1 {
					return ans{status: 201, id: "ch_new"}
				}
				return replay(i)
			}), want: Fail, sev: Critical, says: []string{"by count, not for a time", "judged from the answers alone"}},
		{name: "C24 forgotten: a 4xx", check: "C24", ops: c24([]int{5}, func(int) ans { return ans{status: 422} }),
			want: Fail, sev: High, says: []string{"the key was forgotten"}},

		// C25 concurrent distinct keys.
		{name: "C25 each its own", check: "C25", oracle: true, effects: map[string]int{"k1": 1, "k2": 1, "k3": 1}, ops: c25("ch_1", "ch_2", "ch_3"),
			want: Pass, says: []string{"1 rounds of 3 different keys", "1 effect per key"}},
		{name: "C25 a retry executed again", check: "C25", oracle: true, effects: map[string]int{"k1": 1, "k2": 2, "k3": 1}, ops: c25("ch_1", "ch_9", "ch_3"),
			want: Fail, sev: Critical, says: []string{"executed twice (2 effects)"}},
		{name: "C25 a retry got another key's answer", check: "C25", ops: c25("ch_1", "ch_3", "ch_3"),
			want: Fail, sev: High, says: []string{"got key k3's answer"}},
		{name: "C25 two keys with one answer", check: "C25", ops: []top{
			{"k1", []ans{{label: Label(1, RoleFirst, "key 1 of 2 sent at once"), status: 201, id: "ch_1"}, {label: Label(1, RoleRetry, "key 1"), status: 201, id: "ch_1"}}},
			{"k2", []ans{{label: Label(1, RoleFirst, "key 2 of 2 sent at once"), status: 201, id: "ch_1"}, {label: Label(1, RoleRetry, "key 2"), status: 201, id: "ch_1"}}}},
			want: Fail, sev: High, says: []string{"keys k1 and k2 sent at once got the same answer"}},
		{name: "C25 a fresh key refused 409", check: "C25", ops: []top{
			{"k1", []ans{{label: Label(1, RoleFirst, "key 1 of 2 sent at once"), status: 201, id: "ch_1"}, {label: Label(1, RoleRetry, "key 1"), status: 201, id: "ch_1"}}},
			{"k2", []ans{{label: Label(1, RoleFirst, "key 2 of 2 sent at once"), status: 409}, {label: Label(1, RoleRetry, "key 2"), status: 201, id: "ch_2"}}}},
			want: Fail, sev: High, says: []string{"a valid request refused because of other keys"}},

		// C26 keyless requests from two customers.
		{name: "C26 each processed", check: "C26", ops: c26(ans{status: 201, id: "ch_1"}, ans{status: 201, id: "ch_2"}), want: Pass, says: []string{"each processed on its own"}},
		{name: "C26 both refused", check: "C26", ops: c26(ans{status: 400}, ans{status: 400}), want: Pass, says: []string{"refused (400)"}},
		{name: "C26 the second served the first's", check: "C26", ops: c26(ans{status: 201, id: "ch_1"}, ans{status: 201, id: "ch_1"}),
			want: Fail, sev: Critical, says: []string{"served the first customer's answer"}},
		{name: "C26 the second served the first's, wrapped", check: "C26", ops: c26(ans{status: 201, id: "ch_1"}, ans{status: 200, body: `{"replayed":{"id":"ch_1"}}`}),
			want: Fail, sev: Critical},
		{name: "C26 the second refused after the first", check: "C26", ops: c26(ans{status: 201, id: "ch_1"}, ans{status: 422}),
			want: Fail, sev: High, says: []string{"keyless requests share one record"}},
		{name: "C26 the second refused 401", check: "C26", ops: c26(ans{status: 201, id: "ch_1"}, ans{status: 401}), want: Unknown, says: []string{"check --as"}},

		// C27 long shared prefixes.
		{name: "C27 every pair told apart", check: "C27", oracle: true, effects: c27effects(32, 50), ops: append(c27(32, "", ans{status: 201, id: "ch_a"}), c27(50, "", ans{status: 201, id: "ch_b"})...),
			want: Pass, says: []string{"first 32, 50 characters", "1 effect per key"}},
		{name: "C27 keys cut to 32 characters: the other's answer", check: "C27", ops: c27(32, "", ans{status: 201, id: "ch_a32"}),
			want: Fail, sev: High, says: []string{"first 32 characters with a used key got that key's answer"}},
		{name: "C27 keys cut to 50 characters: refused", check: "C27", ops: append(c27(32, "", ans{status: 201, id: "ch_b"}), c27(50, "", ans{status: 422})...),
			want: Fail, sev: High, says: []string{"first 50 characters with a used key was answered 422"}},
		{name: "C27 long keys refused", check: "C27", ops: append(c27(32, "", ans{status: 201, id: "ch_b"}), c27(255, "refused", ans{})...),
			want: Pass, says: []string{"keys of 263 characters (400) refused: not tested"}},
		{name: "C27 every first key refused", check: "C27", ops: c27(255, "refused", ans{}), want: Unknown, says: []string{"no pair of keys could be tested"}},
	})
}

// c25 is one round of C25's keys k1, k2…, each first answered ch_N, then
// retried with the answer named in retries.
func c25(retries ...string) []top {
	var ops []top
	for i, id := range retries {
		k := fmt.Sprintf("k%d", i+1)
		ops = append(ops, top{k, []ans{
			{label: Label(1, RoleFirst, fmt.Sprintf("key %d of %d sent at once", i+1, len(retries))), status: 201, id: fmt.Sprintf("ch_%d", i+1)},
			{label: Label(1, RoleRetry, fmt.Sprintf("key %d", i+1)), status: 201, id: id}}})
	}
	return ops
}

// c26 is one round of C26: the first customer's request without a key,
// then the second's.
func c26(a, b ans) []top {
	a.label, a.noKey = r(1, RoleKeylessFirst), true
	b.label, b.noKey, b.as = r(1, RoleKeylessSecond), true, true
	return []top{{"x1", []ans{a}}, {"x2", []ans{b}}}
}

// c27 is C27's pair of keys sharing n characters: the first answered 201
// (or 400 when how is "refused"), the second as second.
func c27(n int, how string, second ans) []top {
	round := map[int]int{32: 1, 50: 2, 64: 3, 128: 4, 255: 5}[n]
	prefix := strings.Repeat("p", n)
	k1, k2 := prefix+"a1234567", prefix+"b7654321"
	first := ans{label: Label(round, RoleFirst, fmt.Sprintf("a key of %d characters", len(k1))), status: 201, id: fmt.Sprintf("ch_a%d", n)}
	if how == "refused" {
		first.status, first.id = 400, ""
		return []top{{k1, []ans{first}}}
	}
	second.label = Label(round, RolePrefixed, fmt.Sprintf("equal for %d characters", n))
	return []top{{k1, []ans{first}}, {k2, []ans{second}}}
}

func c27effects(ns ...int) map[string]int {
	out := map[string]int{}
	for _, n := range ns {
		prefix := strings.Repeat("p", n)
		out[prefix+"a1234567"], out[prefix+"b7654321"] = 1, 1
	}
	return out
}

func TestCarries(t *testing.T) {
	first := &history.Attempt{Outcome: history.OK, Status: 201, Fields: map[string]string{IDField: "ch_1"}}
	for body, want := range map[string]bool{
		`{"cached":true,"data":{"id":"ch_1","amount":100}}`: true,
		`{"items":[{"id":"ch_1"}]}`:                         true,
		`{"data":{"id":"ch_12"}}`:                           false,
		`{"customer":"ch_1"}`:                               false,
		`{"cached":true,"data":{"id":"ch_1","amo`:           true, // cut short
		`{"cached":true,"data":{"id":"ch_12","amo`:          false,
	} {
		if got := carries(&history.Attempt{Body: body}, first); got != want {
			t.Errorf("carries(%s) = %v, want %v", body, got, want)
		}
	}
	loc := &history.Attempt{Headers: map[string]string{"Location": "/charges/7"}}
	if !carries(&history.Attempt{Body: `{"links":{"self":"/charges/7"}}`}, loc) || carries(&history.Attempt{Body: `{}`}, loc) {
		t.Error("carries by Location")
	}
}

func TestRetentionCheckpoints(t *testing.T) {
	for n, want := range map[int]string{100: "[12 25 50 100]", 3: "[1 3]", 1: "[1]", 0: "[]"} {
		if got := fmt.Sprint(RetentionCheckpoints(n)); got != want {
			t.Errorf("RetentionCheckpoints(%d) = %s, want %s", n, got, want)
		}
	}
}

// A role never holds ", ": what follows it in a label is detail (Role).
func TestRolesHaveNoDetail(t *testing.T) {
	for _, role := range []string{RoleOriginal, RoleWinnerAgain, RoleOwnKey, RoleFlood, RoleKeylessFirst, RoleKeylessSecond, RolePrefixed,
		RoleFirst, RoleRetry, RoleCopy, RoleBody, RolePast, RoleNormal, RoleErrorBody, RoleQuoted, RoleRaw,
		RoleBadSignature, RoleStale, RoleGenuine, RoleApplied, RoleForgedAgain} {
		if strings.Contains(role, ", ") || Role(Label(3, role, "a detail")) != role {
			t.Errorf("role %q does not survive a label", role)
		}
	}
}
