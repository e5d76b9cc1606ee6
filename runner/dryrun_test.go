package runner

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/scenarios"
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
		{faults.Spec{Kind: faults.KindNemesis, Stop: []string{"sh", "-c", "kill -9 $(cat /run/api.pid)", "--token", "s3cr3t-tok"},
			Start: []string{"env", "API_TOKEN=hunter2-pass", "./start.sh", "it's"}, At: 0.4, Every: 2 * time.Second, Ready: "GET /healthz", ReadyTimeout: 5 * time.Second},
			"nemesis: stop sh -c 'kill -9 $(cat /run/api.pid)' --token xxxxx, start env API_TOKEN=xxxxx ./start.sh 'it'\\''s', at 40% (35%–45% by the seed), every 2s (±10% by the seed), ready GET /healthz within 5s"},
		{faults.Spec{Kind: faults.KindNemesis, Stop: []string{"kubectl", "delete", "pod", "api-0"}, At: 0.02},
			"nemesis: stop kubectl delete pod api-0, no start command (the platform restarts the target), at 2% (1%–7% by the seed), once, no readiness request (ready when the start command ends), commands bounded by 30s (default)"},
	} {
		if got := faultParams(c.f); got != c.want {
			t.Errorf("faultParams(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
}

// The dry run of a scenario that publishes shows each message as it is
// added to the stream, and where its consumer_cut's proxy listens.
func TestDryRunPublish(t *testing.T) {
	sc, err := scenarios.Builtin("stream-charges-cut")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("redis://127.0.0.1:6379/0")
	var b strings.Builder
	if err := DryRun(context.Background(), &b, sc, []*url.URL{u}, nil, 2, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"fault: consumer_cut: 0.2 of the chunks cut, either way, at the proxy on 127.0.0.1:16379",
		`> op 1: XADD lab:charges * message_id <key of op 1> body {"amount":100,"currency":"usd","customer":"cus_1"}`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, b.String())
		}
	}
}
