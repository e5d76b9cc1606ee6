package checks

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/history"
)

// The original sent again after another payload under its key
// (replay.then_original) must get the first answer: a 422 that replaced
// the stored 201 is caught.
func TestSameResponseOriginalAfterMismatch(t *testing.T) {
	hiddenFP := func(status int, fp history.Fingerprint) history.Attempt {
		a := hiddenAnswer(status)
		a.Answers[0].Fingerprint = fp
		return a
	}
	mismatch := replayed(okFP(422, 9, nil), history.FaultMismatch)
	cases := []struct {
		name    string
		h       *history.History
		want    Status
		problem string
	}{
		{"the stored answer replayed", hist(o("k", at(okFP(201, 7, nil), 0, 5), at(mismatch, 60, 61), at(replayed(okFP(201, 7, nil), history.FaultReplay), 120, 121))), Pass, ""},
		{"the 422 replaced the stored 201", hist(o("k", at(okFP(201, 7, nil), 0, 5), at(mismatch, 60, 61), at(replayed(okFP(422, 9, nil), history.FaultReplay), 120, 121))), Fail,
			"attempt 3 (the original, sent again after another payload under its key) answered 422, the first answer was 201: the rejection of the other payload replaced the stored answer"},
		{"a lost first answer, then the 422 replaced it", hist(o("k", at(hiddenFP(201, 7), 0, 5), at(okFP(201, 7, nil), 10, 12), at(mismatch, 60, 61), at(replayed(okFP(422, 9, nil), history.FaultReplay), 120, 121))), Fail,
			"replaced the stored answer"},
		{"a 2xx with another body", hist(o("k", at(okFP(201, 7, nil), 0, 5), at(mismatch, 60, 61), at(replayed(okFP(201, 8, nil), history.FaultReplay), 120, 121))), Fail,
			"(the original, sent again after another payload under its key) answered 201 with body"},
		{"a transient 503", hist(o("k", at(okFP(201, 7, nil), 0, 5), at(mismatch, 60, 61), at(replayed(okFP(503, 8, nil), history.FaultReplay), 120, 121))), Pass, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Check(c.h, history.Invariant{Check: SameResponse}, nil)
			if v.Status != c.want {
				t.Fatalf("Check(same_response) = %s (%s), want %s", v.Status, v.Summary, c.want)
			}
			if c.problem != "" && (len(v.Examples) == 0 || !strings.Contains(v.Examples[0].Problem, c.problem)) {
				t.Errorf("examples = %+v, want a problem saying %q", v.Examples, c.problem)
			}
		})
	}
}

// An attempt the scenario makes invalid on purpose is another request:
// same_response leaves it out. An op with no 2xx is counted as not judged.
func TestSameResponseExpectReject(t *testing.T) {
	h := hist(o("k", at(okFP(400, 9, nil), 0, 5), at(okFP(201, 7, nil), 10, 12), at(okFP(201, 7, nil), 20, 22)), o("j", lost()))
	if v := Check(h, history.Invariant{Check: SameResponse}, nil); v.Status != Fail {
		t.Fatalf("400 then 201 without expect_reject: %s, want fail", v.Status)
	}
	h.Meta.Judge.ExpectReject = []history.Rejection{{Attempt: 1, Status: 400}}
	v := Check(h, history.Invariant{Check: SameResponse}, nil)
	want := "1 op acknowledged, 1 with more than one 2xx answer, all identical; 1 not judged (no 2xx to compare with)"
	if v.Status != Pass || v.Summary != want || v.NotJudged != 1 {
		t.Errorf("Check(same_response) = %s %q, want pass %q", v.Status, v.Summary, want)
	}
}
