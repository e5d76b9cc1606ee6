package checks

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/history"
)

// span is an attempt from start to end, in ms from the start of the run.
func span(a history.Attempt, start, end int) history.Attempt {
	a.Intended, a.Start, a.End = nmsec(start), nmsec(start), nmsec(end)
	return a
}

func nmsec(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// window is a nemesis window that stopped the target at start and saw it
// ready at ready (ms).
func window(start, ready int) history.NemesisWindow {
	return history.NemesisWindow{N: 1, Start: nmsec(start), Ready: nmsec(ready),
		Stop: &history.NemesisCommand{Command: "kill -9 42", Start: nmsec(start), End: nmsec(start)}}
}

func TestNemesisSpans(t *testing.T) {
	ws := []history.NemesisWindow{window(100, 200), window(500, 600), {N: 3, Err: "it never ran"}}
	for _, tc := range []struct {
		name string
		atts []history.Attempt
		want []int
	}{
		{"before", []history.Attempt{span(ok(201), 10, 90)}, nil},
		{"in flight at the stop", []history.Attempt{span(lost(), 90, 110)}, []int{1}},
		{"retried across it", []history.Attempt{span(lost(), 50, 60), span(ok(201), 250, 260)}, []int{1}},
		{"inside it", []history.Attempt{span(failed(), 150, 150)}, []int{1}},
		{"after", []history.Attempt{span(ok(201), 201, 300)}, nil},
		{"across both", []history.Attempt{span(lost(), 90, 110), span(ok(201), 590, 700)}, []int{1, 2}},
		{"none", nil, nil},
	} {
		if got := NemesisSpans(tc.atts, ws); !cmp.Equal(got, tc.want) {
			t.Errorf("NemesisSpans(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// nemesisRun is a run of two keys: k1 answered twice with different
// bodies across a nemesis window (a same_response violation), k2 clean.
func nemesisRun(expect string, ws ...history.NemesisWindow) *history.History {
	h := hist(o("k1", span(okFP(201, 1, nil), 10, 20), span(okFP(201, 2, nil), 300, 310)), o("k2", span(ok(201), 400, 410)))
	h.Meta.Judge = history.Judge{Expect: expect, Invariants: []history.Invariant{{Check: SameResponse}}}
	h.Meta.Nemesis = ws
	return h
}

func TestJudgeNemesis(t *testing.T) {
	fine := window(100, 200)
	failedStop := window(100, 200)
	failedStop.Err = "stop command exited 1"
	never := history.NemesisWindow{N: 1, Err: "it never ran: the load ended before its moment"}
	clean := func(h *history.History) *history.History { // k1 answered alike
		h.Attempts[1].Fingerprint = 1
		return h
	}
	for _, tc := range []struct {
		name    string
		h       *history.History
		want    Result
		why     string
		spanned bool
	}{
		{"a violation across a window is named so", nemesisRun("pass", fine), NotMet, "invariant violated", true},
		{"a clean run with a fine window", clean(nemesisRun("pass", fine)), Met, "every invariant held", false},
		{"a failed stop: cannot pass", clean(nemesisRun("pass", failedStop)), Inconclusive, "nemesis window 1 did not go as declared: stop command exited 1", false},
		{"a window that never ran: cannot pass", clean(nemesisRun("pass", never)), Inconclusive, "it never ran", false},
		{"a failed stop: cannot miss an expected violation either", clean(nemesisRun("violation", failedStop)), Inconclusive, "did not go as declared", false},
		{"a violation caught stands", nemesisRun("violation", failedStop), Met, "caught one", true},
		{"a violation found stands", nemesisRun("pass", failedStop), NotMet, "invariant violated", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := Judge(tc.h, Measured{})
			if j.Result != tc.want || !strings.Contains(j.Why, tc.why) {
				t.Errorf("Judge = %s (%s), want %s (%s)", j.Result, j.Why, tc.want, tc.why)
			}
			named := false
			for _, v := range j.Verdicts {
				for _, ex := range v.Examples {
					named = named || strings.Contains(ex.Problem, "its attempts span nemesis window 1: the target stopped at 0.10 s, ready at 0.20 s")
				}
			}
			if named != tc.spanned {
				t.Errorf("an example names the window: %v, want %v; verdicts %+v", named, tc.spanned, j.Verdicts)
			}
		})
	}
}
