package checks

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// C28 on recorded crashes: a retry processed once after the restart
// passes; a key answered in flight after the API came back is stuck
// (high); a second effect is the cut request executed again (critical);
// a request answered before the kill, or a crash that failed, judges
// nothing.
func TestContractC28(t *testing.T) {
	cut := ans{label: r(1, RoleCrashed), out: history.Info, start: 0, end: 30 * time.Millisecond}
	after := func(status int, id string, end time.Duration) ans {
		return ans{label: r(1, RoleAfterRestart), status: status, id: id, start: end - 5*time.Millisecond, end: end}
	}
	ready := history.NemesisWindow{N: 1, Start: 20 * time.Millisecond, Ready: time.Second}
	cases := []struct {
		name    string
		atts    []ans
		effects int
		window  *history.NemesisWindow
		want    Status
		sev     Severity
		says    string
	}{
		{"processed once after the restart", []ans{cut, after(409, "", 1100*time.Millisecond), after(201, "ch_1", 1300*time.Millisecond)}, 1, &ready, Pass, "", "processed once"},
		{"the key lost with the process", []ans{cut, after(201, "ch_1", 1100*time.Millisecond)}, 1, &ready, Pass, "", ""},
		{"stuck after the restart", []ans{cut, after(409, "", 1100*time.Millisecond), after(409, "", 4*time.Second)}, 1, &ready, Fail, High, "stuck"},
		{"executed again", []ans{cut, after(201, "ch_2", 1100*time.Millisecond)}, 2, &ready, Fail, Critical, "executed again"},
		{"answered before the kill", []ans{{label: r(1, RoleCrashed), status: 201, id: "ch_1"}}, 1, &ready, Unknown, "", "nothing was in flight"},
		{"the kill command failed", []ans{cut, after(201, "ch_1", time.Second)}, 1,
			&history.NemesisWindow{N: 1, Err: "stop command exited 1"}, Unknown, "", "did not go as planned"},
		{"no crash recorded", []ans{cut, after(201, "ch_1", time.Second)}, 1, nil, Unknown, "", "no crash"},
	}
	for _, c := range cases {
		h := contractHistory("C28", []top{{"k1", c.atts}}, map[string]int{"k1": c.effects}, true, "draft", nil)
		if c.window != nil {
			h.Meta.Nemesis = []history.NemesisWindow{*c.window}
		}
		got := JudgeContract(h).Checks[0]
		if got.Result != c.want || (c.want == Fail && got.Severity != c.sev) {
			t.Errorf("%s: %s %s (%s), want %s %s", c.name, got.Result, got.Severity, got.Summary, c.want, c.sev)
		}
		if c.says != "" && !strings.Contains(got.Summary, c.says) {
			t.Errorf("%s: summary %q, want it to say %q", c.name, got.Summary, c.says)
		}
	}
}
