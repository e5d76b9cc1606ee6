package runner

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/faults"
)

// The dry run shows every parameter of every fault, a relative one said
// to be measured before the load.
func TestDryRunFaultParams(t *testing.T) {
	for _, c := range []struct {
		f    faults.Spec
		want string
	}{
		{faults.Spec{Kind: "timeout", Rate: 0.05, After: time.Second}, "timeout at rate 0.05, after 1s (fixed)"},
		{faults.Spec{Kind: "timeout", Rate: 0.05, Relative: faults.Relative{Percentile: 50, Factor: 0.5}, Attempts: []int{1}},
			"timeout at rate 0.05, attempts [1], after 0.5x (0.5 × the p50, measured before the load)"},
		{faults.Spec{Kind: "timeout", Rate: 0.1, Relative: faults.Relative{Percentile: 90, Factor: 1}}, "timeout at rate 0.1, after p90 (the p90, measured before the load)"},
		{faults.Spec{Kind: "duplicate", Rate: 0.2, Copies: 3}, "duplicate at rate 0.2, copies 3"},
		{faults.Spec{Kind: "delay", Rate: 0.2, Delay: 20 * time.Millisecond}, "delay at rate 0.2, delay 20ms"},
		{faults.Spec{Kind: "drop_ack", Rate: 0.1}, "drop_ack at rate 0.1"},
	} {
		if got := faultParams(c.f); got != c.want {
			t.Errorf("faultParams(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
}
