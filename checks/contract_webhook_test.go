package checks

import "testing"

// w01 is one round of W01: an event delivered with a bad signature
// answered bad, one stamped an hour ago answered stale, and one forged
// (forged), then delivered genuine (genuine; status 0 sends none).
func w01(bad, stale, forged, genuine int) []top {
	ops := []top{
		{"evt_bad", []ans{{label: r(1, RoleBadSignature), status: bad}}},
		{"evt_stale", []ans{{label: r(1, RoleStale), status: stale}}},
	}
	then := top{"evt_then", []ans{{label: Label(1, RoleBadSignature, "then genuine"), status: forged}}}
	if genuine != 0 {
		then.atts = append(then.atts, ans{label: r(1, RoleGenuine), status: genuine, id: "ch_1"})
	}
	return append(ops, then, top{"evt_again", []ans{
		{label: r(1, RoleApplied), status: 201, id: "ch_2"},
		{label: r(1, RoleForgedAgain), status: 400}}})
}

// w01Again is w01 refused throughout, the forged redelivery of the
// applied event answered again.
func w01Again(again int) []top {
	ops := w01(400, 400, 400, 201)
	ops[3].atts[1].status = again
	return ops
}

// W01 on hand-written deliveries: a forgery accepted, answered 5xx or
// applied, an event id burnt by a forgery, each accused; a receiver that
// refuses every forgery and applies the genuine delivery once, met.
func TestW01ForgedDeliveries(t *testing.T) {
	good := map[string]int{"evt_bad": 0, "evt_stale": 0, "evt_then": 1, "evt_again": 1}
	judgeVerdicts(t, []verdict{
		{name: "refused, no effect", check: "W01", ops: w01(400, 400, 401, 201), effects: good, oracle: true,
			want: Pass, says: []string{"4 forged deliveries", "no effect", "applied once"}},
		{name: "refused, answers alone", check: "W01", ops: w01(400, 400, 401, 201),
			want: Pass, says: []string{"judged from the answers alone"}},
		{name: "a forgery accepted", check: "W01", ops: w01(200, 400, 400, 201), effects: good, oracle: true,
			want: Fail, sev: Critical, says: []string{"signed with another key) was accepted: answered 200"}},
		{name: "a stale delivery accepted, answers alone", check: "W01", ops: w01(400, 202, 400, 201),
			want: Fail, sev: Critical, says: []string{"stamped an hour ago) was accepted"}},
		{name: "a forgery answered 500", check: "W01", ops: w01(500, 400, 400, 201), effects: good, oracle: true,
			want: Fail, sev: High, says: []string{"answered 500, not 4xx"}},
		{name: "applied before verified", check: "W01", ops: w01(400, 400, 400, 201),
			effects: map[string]int{"evt_bad": 1, "evt_stale": 0, "evt_then": 1, "evt_again": 1}, oracle: true,
			want: Fail, sev: Critical, says: []string{"event evt_bad: a forged delivery had an effect (1): applied before"}},
		{name: "the forgery applied beside the genuine delivery", check: "W01", ops: w01(400, 400, 400, 201),
			effects: map[string]int{"evt_bad": 0, "evt_stale": 0, "evt_then": 2, "evt_again": 1}, oracle: true,
			want: Fail, sev: Critical, says: []string{"event evt_then: 2 effects"}},
		{name: "the event id burnt: refused", check: "W01", ops: w01(400, 400, 400, 409), effects: good, oracle: true,
			want: Fail, sev: High, says: []string{"burnt the event id"}},
		{name: "the event id burnt: acknowledged, never applied", check: "W01", ops: w01(400, 400, 400, 200),
			effects: map[string]int{"evt_bad": 0, "evt_stale": 0, "evt_then": 0, "evt_again": 1}, oracle: true,
			want: Fail, sev: Critical, says: []string{"acknowledged but had no effect"}},
		{name: "a forged redelivery answered from the store", check: "W01", ops: w01Again(200), effects: good, oracle: true,
			want: Fail, sev: High, says: []string{"deduplicated (and answered) before it verified"}},
		{name: "a forged redelivery applied again", check: "W01", ops: w01Again(400),
			effects: map[string]int{"evt_bad": 0, "evt_stale": 0, "evt_then": 1, "evt_again": 2}, oracle: true,
			want: Fail, sev: Critical, says: []string{"event evt_again: 2 effects"}},
		{name: "a forgery answered 302", check: "W01", ops: w01(302, 400, 400, 201), effects: good, oracle: true,
			want: Fail, sev: Medium, says: []string{"answered 302, not 4xx"}},
	})
}
