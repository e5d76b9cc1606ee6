package checks

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// APIScorecard is the audit of a whole API: one Scorecard per operation
// its spec describes, the operations worst first, and those that were
// not audited with why.
type APIScorecard struct {
	FormatVersion int `json:"format_version"`
	// Spec is where the OpenAPI document was read from, redacted.
	Spec string `json:"spec"`
	// Target is the base URL the operations were sent to, redacted.
	Target  string `json:"target"`
	Profile string `json:"profile"`
	// Requests is how many requests the audit sent in all.
	Requests int `json:"requests"`
	// Operations are the audited operations, worst first.
	Operations []OperationCard `json:"operations"`
	// Skipped are the operations the plan left out, each with why and,
	// where a place in the document made it, its JSON pointer.
	Skipped []SkippedOperation `json:"skipped"`
	Result  Result             `json:"result"`
	Why     string             `json:"why"`
	FailOn  string             `json:"fail_on,omitempty"`
	// Interrupted is true when the audit stopped before its end.
	Interrupted bool `json:"interrupted,omitempty"`
}

// OperationCard is the audit of one operation.
type OperationCard struct {
	// Operation names it: "createCharge (POST /charges)".
	Operation string `json:"operation"`
	Method    string `json:"method"`
	// Path is the spec's path template.
	Path string `json:"path"`
	// Pointer is the operation's JSON pointer in the document.
	Pointer string `json:"pointer"`
	// Plan says where the key and body came from, and what the plan could
	// not fill in.
	Plan []string `json:"plan,omitempty"`
	// Error says why the operation could not be audited (its plain
	// request failed, the request budget ran out); Card is nil then.
	Error string     `json:"error,omitempty"`
	Card  *Scorecard `json:"scorecard,omitempty"`
}

// SkippedOperation is an operation the plan left out.
type SkippedOperation struct {
	Operation string `json:"operation"`
	Pointer   string `json:"pointer,omitempty"`
	Reason    string `json:"reason"`
}

// Result is the operation's result: its scorecard's, inconclusive when
// it could not be audited.
func (o OperationCard) Result() Result {
	if o.Card == nil {
		return Inconclusive
	}
	return o.Card.Result
}

// worst is how bad o is, for ordering: a failed check's severity above
// all, then not audited, then inconclusive.
func (o OperationCard) worst(failOn string) int {
	if o.Card == nil {
		return 1
	}
	w := 0
	for _, c := range o.Card.Checks {
		if c.Failed(failOn) {
			w = max(w, 10+c.Severity.Rank())
		} else if c.Result == Fail {
			w = max(w, 2)
		}
	}
	if w == 0 && o.Card.Result == Inconclusive {
		w = 1
	}
	return w
}

// Decide orders the operations worst first and sets the result: not met
// when an operation's contract is violated, inconclusive when one could
// not be judged (or none was audited, or the audit was interrupted), met
// otherwise. The operations the plan left out are named, not judged.
func (a *APIScorecard) Decide() {
	a.FormatVersion = ScorecardFormat
	slices.SortStableFunc(a.Operations, func(x, y OperationCard) int { return cmp.Compare(y.worst(a.FailOn), x.worst(a.FailOn)) })
	var violated, unjudged []string
	a.Requests = 0
	for _, o := range a.Operations {
		if o.Card != nil {
			a.Requests += o.Card.Requests
		}
		switch o.Result() {
		case NotMet:
			violated = append(violated, o.Operation)
		case Inconclusive:
			unjudged = append(unjudged, o.Operation)
		}
	}
	switch {
	case len(violated) > 0:
		a.Result, a.Why = NotMet, fmt.Sprintf("contract violated by %d of %d operations: %s", len(violated), len(a.Operations), strings.Join(violated, ", "))
	case len(a.Operations) == 0:
		a.Result, a.Why = Inconclusive, "no operation was audited"
	case len(unjudged) > 0:
		a.Result, a.Why = Inconclusive, fmt.Sprintf("%d of %d operations could not be judged: %s", len(unjudged), len(a.Operations), strings.Join(unjudged, ", "))
	case a.Interrupted:
		a.Result, a.Why = Inconclusive, "no operation failed on what ran, but the audit was interrupted before its end"
	default:
		a.Result, a.Why = Met, fmt.Sprintf("all %d audited operations met the contract", len(a.Operations))
	}
	if len(a.Skipped) > 0 {
		a.Why += fmt.Sprintf(" (%d left out by the plan)", len(a.Skipped))
	}
}
