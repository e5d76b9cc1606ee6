package checks

import (
	"strings"
	"testing"
)

func card(result Result, checks ...ContractCheck) *Scorecard {
	return &Scorecard{Result: result, Requests: 10, Checks: checks}
}

func TestAPIScorecardDecide(t *testing.T) {
	met := OperationCard{Operation: "a", Card: card(Met, ContractCheck{ID: "C03", Result: Pass, Severity: Critical})}
	medium := OperationCard{Operation: "m", Card: card(Met, ContractCheck{ID: "C04", Result: Fail, Severity: Medium})}
	critical := OperationCard{Operation: "c", Card: card(NotMet, ContractCheck{ID: "C06", Result: Fail, Severity: Critical})}
	high := OperationCard{Operation: "h", Card: card(NotMet, ContractCheck{ID: "C02", Result: Fail, Severity: High})}
	notAudited := OperationCard{Operation: "n", Error: "its plain request failed"}
	unknown := OperationCard{Operation: "u", Card: card(Inconclusive, ContractCheck{ID: "C03", Result: Unknown})}

	a := &APIScorecard{Operations: []OperationCard{met, medium, high, notAudited, critical, unknown}}
	a.Decide()
	var order []string
	for _, o := range a.Operations {
		order = append(order, o.Operation)
	}
	if got := strings.Join(order, ""); got != "chmnua" && got != "chmuna" {
		t.Errorf("order %q: want the critical failure first, then high, then medium, then the unjudged, then met", got)
	}
	if a.Result != NotMet || !strings.Contains(a.Why, "2 of 6") || a.Requests != 50 {
		t.Errorf("result %s: %s (%d requests)", a.Result, a.Why, a.Requests)
	}

	for _, tc := range []struct {
		ops  []OperationCard
		want Result
		why  string
	}{
		{[]OperationCard{met, medium}, Met, "all 2"},
		{[]OperationCard{met, notAudited}, Inconclusive, "1 of 2 operations could not be judged: n"},
		{[]OperationCard{met, unknown}, Inconclusive, "could not be judged: u"},
		{nil, Inconclusive, "no operation was audited"},
	} {
		a := &APIScorecard{Operations: tc.ops, Skipped: []SkippedOperation{{Operation: "s", Reason: "no key"}}}
		a.Decide()
		if a.Result != tc.want || !strings.Contains(a.Why, tc.why) || !strings.Contains(a.Why, "1 left out by the plan") {
			t.Errorf("%d operations: %s: %s, want %s with %q", len(tc.ops), a.Result, a.Why, tc.want, tc.why)
		}
	}
	a = &APIScorecard{Operations: []OperationCard{met}, Interrupted: true}
	if a.Decide(); a.Result != Inconclusive {
		t.Errorf("interrupted: %s", a.Result)
	}
}
