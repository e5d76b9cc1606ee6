package reports

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/checks"
)

// attributionShares is how many faults an attribution line names.
const attributionShares = 4

// attributionLine says which faults the violating operations had, beside
// the run's share of them: "every violating op had a fault first: timeout
// on attempt 1 in 43 of 43 (16% of all 500 ops)". "" when v has none.
func attributionLine(v checks.Verdict) string {
	a := v.Attribution
	if a == nil || a.Violating == 0 {
		return ""
	}
	clean := true // no violating op went without a fault
	var items []string
	more := 0
	for _, f := range a.Faults {
		if f.Fault == "" && f.Violating > 0 {
			clean = false
		}
		if f.Violating == 0 {
			continue
		}
		if len(items) == attributionShares {
			more++
			continue
		}
		all := share(f.All, a.Ops)
		if len(items) == 0 {
			all += fmt.Sprintf(" of all %d ops", a.Ops)
		}
		items = append(items, fmt.Sprintf("%s in %d of %d (%s)", faultName(f), f.Violating, a.Violating, all))
	}
	if more > 0 {
		items = append(items, fmt.Sprintf("%d more in report.json", more))
	}
	lead := "faults of the violating ops: "
	if clean {
		lead = "every violating op had a fault: "
	}
	return lead + strings.Join(items, "; ")
}

func faultName(f checks.FaultShare) string {
	if f.Fault == "" {
		return "no fault"
	}
	return fmt.Sprintf("%s on attempt %d", f.Fault, f.Attempt)
}

// share is n of total as a whole percentage, "<1%" for a few.
func share(n, total int) string {
	switch {
	case total == 0:
		return "0%"
	case n > 0 && n*100 < total:
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", float64(n)*100/float64(total))
}
