package abtest

import (
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
)

// ArmSpecs are the two arms of an A/B of op, as scenarios' requests: arm
// A (bench-a) the request as given, arm B (bench-b) its baseline, the
// same request to baselinePath when it is not "", or without its key
// when noKey. Each sends one attempt per op and judges nothing but
// same_response, which needs no oracle; Run sets their load.
func ArmSpecs(op scenarios.RequestSpec, baselinePath string, noKey bool) (a, b scenarios.RequestSpec) {
	arm := func(name string) scenarios.RequestSpec {
		spec := op
		spec.Name = name
		spec.Load = scenarios.Load{Rate: 1, Duration: scenarios.Duration(time.Second)}
		spec.Retry = scenarios.Retry{Attempts: 1}
		spec.Invariants = []scenarios.Invariant{{Check: "same_response"}}
		return spec
	}
	a, b = arm("bench-a"), arm("bench-b")
	if baselinePath != "" {
		b.Request.Path = baselinePath
	}
	if noKey {
		b.Key = scenarios.KeyPlace{None: true}
	}
	return a, b
}
