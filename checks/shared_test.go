package checks

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/history"
)

// withCalibration adds the calibration's two fresh keys, answered with
// the ids given, to h.
func withCalibration(h *history.History, ids ...string) *history.History {
	for i, id := range ids {
		n := len(h.Ops)
		h.Ops = append(h.Ops, history.Op{ID: n, Key: "cal" + id + string(rune('a'+i)), Check: history.CheckCalibration})
		h.Attempts = append(h.Attempts, history.Attempt{Op: n, N: 1, Label: Label(0, RoleCalibration, ""), Outcome: history.OK, Status: 200,
			Fields: map[string]string{IDField: id}, Body: `{"id":"` + id + `"}`, Fingerprint: fp(id + "|"),
			Request: &history.Request{Method: "POST", URL: "http://api/posts/p/like"}})
	}
	return h
}

// An endpoint whose every answer names one shared resource (a like
// answers with the post) cannot be accused from its answers of serving
// one key another's execution: the calibration's two fresh keys were
// answered alike too. Its checks say unknown; where the calibration's
// keys were answered apart, the same answers are a finding.
func TestSharedAnswersAreNoEvidence(t *testing.T) {
	post := "post_1"
	cases := []struct {
		check string
		ops   []top
		sev   Severity
	}{
		{"C15", []top{{"k1", []ans{{label: r(1, RoleFirstUser), status: 200, id: post, body: `{"id":"post_1","likes":1}`}, {label: r(1, RoleSecondUser), status: 200, id: post, body: `{"id":"post_1","likes":2}`}}}}, Critical},
		{"C25", []top{
			{"k1", []ans{{label: Label(1, RoleFirst, "key 1 of 2 sent at once"), status: 200, id: post, body: `{"id":"post_1","likes":3}`}, {label: Label(1, RoleRetry, "key 1"), status: 200, id: post, body: `{"id":"post_1","likes":4}`}}},
			{"k2", []ans{{label: Label(1, RoleFirst, "key 2 of 2 sent at once"), status: 200, id: post, body: `{"id":"post_1","likes":5}`}, {label: Label(1, RoleRetry, "key 2"), status: 200, id: post, body: `{"id":"post_1","likes":6}`}}}}, High},
		{"C26", []top{{"", []ans{
			{label: r(1, RoleKeylessFirst), status: 200, id: post, body: `{"id":"post_1","likes":7}`, noKey: true},
			{label: r(1, RoleKeylessSecond), status: 200, id: post, body: `{"id":"post_1","likes":8}`, noKey: true, as: true}}}}, Critical},
	}
	for _, tc := range cases {
		t.Run(tc.check, func(t *testing.T) {
			shared := JudgeContract(withCalibration(contractHistory(tc.check, tc.ops, nil, false, "draft", nil), post, post)).Checks[0]
			if shared.Result != Unknown || !strings.Contains(shared.Summary, "shared resource") {
				t.Errorf("calibration answered alike: %s %s: %s", tc.check, shared.Result, shared.Summary)
			}
			apart := JudgeContract(withCalibration(contractHistory(tc.check, tc.ops, nil, false, "draft", nil), "ch_1", "ch_2")).Checks[0]
			if apart.Result != Fail || apart.Severity != tc.sev {
				t.Errorf("calibration answered apart: %s %s (%s): %s, want a %s failure", tc.check, apart.Result, apart.Severity, apart.Summary, tc.sev)
			}
		})
	}
}

// A byte-identical replay of the first principal's answer is a leak even
// where every answer names the shared resource: the guard is for likeness
// of the resource, not for one answer served twice.
func TestSharedAnswerReplayedIsALeak(t *testing.T) {
	post := "post_1"
	ops := []top{{"k1", []ans{{label: r(1, RoleFirstUser), status: 200, id: post, body: `{"id":"post_1","likes":1}`},
		{label: r(1, RoleSecondUser), status: 200, id: post, body: `{"id":"post_1","likes":1}`}}}}
	c := JudgeContract(withCalibration(contractHistory("C15", ops, nil, false, "draft", nil), post, post)).Checks[0]
	if c.Result != Fail || c.Severity != Critical {
		t.Errorf("C15 on a replayed answer: %s (%s): %s", c.Result, c.Severity, c.Summary)
	}
}
