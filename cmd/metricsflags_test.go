package cmd

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// pushed reads the samples of name on the Pushgateway at gw whose labels
// hold every label of want (`name="value"`), keyed by their labels.
func pushed(t *testing.T, gw, name string, want ...string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(gw + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s/metrics: %v", gw, err)
	}
	out := map[string]float64{}
	for _, m := range mfs[name].GetMetric() {
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
		}
		key := strings.Join(labels, ",")
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(key, w)
		}
		if ok {
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

// one is the value of the only sample of name with the labels want.
func one(t *testing.T, gw, name string, want ...string) float64 {
	t.Helper()
	got := pushed(t, gw, name, want...)
	if len(got) != 1 {
		t.Fatalf("%s{%s} on the Pushgateway: %d samples %v, want 1", name, strings.Join(want, ","), len(got), got)
	}
	for _, v := range got {
		return v
	}
	return 0
}

// --metrics-push pushes each scenario's result to a real Pushgateway at
// its end, read back here; the password in its URL is sent, never shown.
func TestRunMetricsPush(t *testing.T) {
	t.Parallel()
	testsvc.Need(t, testsvc.PushgatewayServer)
	gw := testsvc.Pushgateway(t)
	const secret = "hunter2secret"
	u, _ := url.Parse(gw)
	u.User = url.UserPassword("ci", secret)
	srv := newPayServer(t, false)
	dir := t.TempDir()
	r := runMain(t, nil, "run", writeScenario(t, payScenario), "--target", srv.URL, "--seed", "1", "--out", dir,
		"--metrics-push", u.String(), "--metrics-label", "instance=ci", "--metrics-every", "20ms")
	if r.code != ExitFailed {
		t.Fatalf("run on a naive server with --metrics-push: exit %d, want %d\n%s", r.code, ExitFailed, r.err)
	}
	group := []string{`instance="ci"`, `job="idemcheck"`, `scenario="pay"`}
	ledger := append(group, `invariant="exactly_once"`, `oracle="ledger"`)
	if v := one(t, gw, "idemcheck_result", append(ledger, `result="not_met"`)...); v != 1 {
		t.Errorf("idemcheck_result of exactly_once on ledger, not_met = %v, want 1", v)
	}
	if v := one(t, gw, "idemcheck_result", append(ledger, `result="met"`)...); v != 0 {
		t.Errorf("idemcheck_result of exactly_once on ledger, met = %v, want 0", v)
	}
	if v := one(t, gw, "idemcheck_run_result", append(group, `result="not_met"`)...); v != 1 {
		t.Errorf("idemcheck_run_result not_met = %v, want 1", v)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if v := one(t, gw, "idemcheck_run_info", append(group, `target_host="`+host+`"`)...); v != 1 {
		t.Errorf("idemcheck_run_info = %v, want 1", v)
	}
	if got := pushed(t, gw, "idemcheck_ops_total", group...); len(got) == 0 {
		t.Error("no idemcheck_ops_total of pay on the Pushgateway")
	}
	if !strings.Contains(r.err, "metrics pushed to "+gw) {
		t.Errorf("stderr does not say where metrics are pushed:\n%s", r.err)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"stdout": r.out, "stderr": r.err, "report.json": string(report)} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the push URL's password:\n%s", where, text)
		}
	}
}

// A push that fails does not hide the verdict: the report is written, the
// run exits 4 with the push's error, the password masked.
func TestRunMetricsPushFails(t *testing.T) {
	t.Parallel()
	const secret = "hunter2secret"
	srv := newPayServer(t, true)
	dir := t.TempDir()
	r := runMain(t, nil, "run", writeScenario(t, payScenario), "--target", srv.URL, "--seed", "1", "--out", dir,
		"--metrics-push", "http://ci:"+secret+"@127.0.0.1:1", "--metrics-every", "0")
	if r.code != ExitRuntime || !strings.Contains(r.err, "pushing pay's metrics to http://127.0.0.1:1") {
		t.Errorf("run with an unreachable Pushgateway: exit %d, want %d naming the push\n%s", r.code, ExitRuntime, r.err)
	}
	if strings.Contains(r.err+r.out, secret) {
		t.Errorf("output shows the push URL's password:\n%s%s", r.out, r.err)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
		t.Errorf("report not written after a failed push: %v", err)
	}
	if !strings.Contains(r.out, "PASS") {
		t.Errorf("the verdicts are not printed after a failed push:\n%s", r.out)
	}
}

func TestRunMetricsPushUsage(t *testing.T) {
	t.Parallel()
	const secret = "hunter2secret"
	sc := writeScenario(t, payScenario)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-push", "ftp://ci:" + secret + "@gw:9091"}, "not a Pushgateway URL"},
		{[]string{"--metrics-push", "http://ci:" + secret + "@gw:9091/?token=" + secret}, "query"},
		{[]string{"--metrics-push", "http://gw:9091", "--metrics-label", "result=x"}, "bad grouping label"},
		{[]string{"--metrics-every", "5s"}, "need --metrics-push"},
		{[]string{"--metrics-label", "instance=ci"}, "need --metrics-push"},
		{[]string{"--metrics-push", "http://gw:9091", "--metrics-label", "instance"}, "want NAME=VALUE"},
		{[]string{"--metrics-push", "http://gw:9091", "--metrics-label", "instance=a", "--metrics-label", "instance=b"}, "each NAME once"},
		{[]string{"--metrics-push", "http://gw:9091", "--metrics-every", "-1s"}, "negative"},
	} {
		args := append([]string{"run", sc, "--target", "http://127.0.0.1:1"}, c.args...)
		r := runMain(t, nil, args...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s", c.args, r.code, ExitUsage, c.want, r.err)
		}
		if strings.Contains(r.err+r.out, secret) {
			t.Errorf("%v shows the password:\n%s%s", c.args, r.out, r.err)
		}
	}
}
