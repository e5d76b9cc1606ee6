package cmd

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/measure"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
)

// timeoutScenario is the built-in charges-timeout with its timeout after
// the given value: a duration, or relative to the latency measured
// before the load.
func timeoutScenario(t *testing.T, after string) string {
	t.Helper()
	b, err := scenarios.BuiltinYAML("charges-timeout")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "after: 15ms", "after: "+after, 1)
	if !strings.Contains(text, "after: "+after) {
		t.Fatal("charges-timeout no longer has after: 15ms")
	}
	return writeScenario(t, text)
}

// A fault that never bit cannot let a run pass, and a relative timeout
// bites wherever the target's latency is: against the lab (charges in
// about 20 ms), a timeout after 1s never fires, so the run is
// inconclusive, naming the fault and a value that would bite, even on a
// lab whose check-then-act race would charge twice under a timeout that
// fired; after: 0.5x fires, catches check-then-act (whose double charge
// needs the client to give up mid-request) and not-atomic, and accuses
// nothing on the correct lab.
//
// A timing test: 0.5x of a latency measured under -race can be mostly the
// instrumented client's, so the lab has charged and written the key
// before the timeout fires, and check-then-act has no window left.
func TestFaultsBiteOnTheLab(t *testing.T) {
	testenv.Timing(t)
	cases := []struct {
		name, after, bug string
		want             ExitCode
		says             []string
	}{
		{"1s on the correct lab", "1s", "", ExitInconclusive, []string{"the timeout faults never bit", "half the p50", "after: 0.5x would bite"}},
		{"1s on check-then-act", "1s", "check-then-act", ExitInconclusive, []string{"the timeout faults never bit"}},
		{"0.5x on check-then-act", "0.5x", "check-then-act", ExitFailed, []string{"invariant violated"}},
		{"0.5x on not-atomic", "0.5x", "not-atomic", ExitFailed, []string{"invariant violated"}},
		{"0.5x on the correct lab", "0.5x", "", ExitOK, []string{"every invariant held"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var bugs []string
			if c.bug != "" {
				bugs = append(bugs, c.bug)
			}
			url := startTestLab(t, memoryBackend(), bugs...)
			dir := t.TempDir()
			r := runMain(t, nil, "run", timeoutScenario(t, c.after), "--target", url, "--seed", "1", "--ops", "80", "--out", dir)
			sum := readSummary(t, filepath.Join(dir, "report.json"))
			if r.code != c.want {
				t.Fatalf("after: %s, bug %q: exit %d, want %d\n%s%s", c.after, c.bug, r.code, c.want, r.out, r.err)
			}
			for _, s := range c.says {
				if !strings.Contains(sum.Why, s) {
					t.Errorf("after: %s, bug %q: why %q, want it to say %q", c.after, c.bug, sum.Why, s)
				}
			}
			timeout := faultCount(sum, "timeout")
			if timeout == nil || timeout.Planned == 0 {
				t.Fatalf("faults %+v: no timeout planned", sum.Faults)
			}
			bit := timeout.Bit > 0
			if bit != (c.after == "0.5x") {
				t.Errorf("after: %s: timeout %d planned, %d bit", c.after, timeout.Planned, timeout.Bit)
			}
			if cal := sum.Calibration; (cal != nil) != (c.after == "0.5x") || (cal != nil && (len(cal.Resolved) != 1 || cal.Resolved[0].Value <= 0)) {
				t.Errorf("after: %s: calibration %+v, want one only for a relative after, with its value", c.after, cal)
			}
			if c.want == ExitFailed && !failed(sum, checks.AtMostOnce, checks.ExactlyOnce) {
				t.Errorf("bug %s: no failed at_most_once or exactly_once verdict:\n%s", c.bug, r.out)
			}
			if !strings.Contains(r.out, fmt.Sprintf("timeout %d planned, %d bit", timeout.Planned, timeout.Bit)) {
				t.Errorf("the text report does not give the timeouts planned and bit:\n%s", r.out)
			}
		})
	}
}

func faultCount(s *reports.Summary, kind string) *measure.FaultCount {
	for i := range s.Faults {
		if s.Faults[i].Name == kind {
			return &s.Faults[i]
		}
	}
	return nil
}

func failed(s *reports.Summary, invariants ...string) bool {
	for _, v := range s.Verdicts {
		for _, inv := range invariants {
			if v.Invariant == inv && v.Status == checks.Fail {
				return true
			}
		}
	}
	return false
}
