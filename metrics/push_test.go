package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testsvc"
	"github.com/idemcheck/idemcheck/reports"
)

// series are the samples of a scrape by name, each keyed by its labels
// as `name="value",...` sorted by name.
type series map[string]map[string]float64

// scrape reads u (a /metrics page) with the client library's parser.
func scrape(t *testing.T, u string) series {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", u, err)
	}
	out := series{}
	for name, mf := range mfs {
		out[name] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			var v float64
			switch {
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Untyped != nil:
				v = m.GetUntyped().GetValue()
			case m.Histogram != nil:
				v = float64(m.GetHistogram().GetSampleCount())
			}
			out[name][labelKey(m.GetLabel())] = v
		}
	}
	return out
}

func labelKey(ls []*dto.LabelPair) string {
	var kv []string
	for _, l := range ls {
		if l.GetValue() != "" { // Prometheus reads an empty label as absent
			kv = append(kv, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// has fails t unless s holds the sample name{labels} = want.
func (s series) has(t *testing.T, name, labels string, want float64) {
	t.Helper()
	got, ok := s[name][labels]
	if !ok {
		keys := make([]string, 0, len(s[name]))
		for k := range s[name] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Errorf("no %s{%s}; its series:\n  %s", name, labels, strings.Join(keys, "\n  "))
		return
	}
	if got != want {
		t.Errorf("%s{%s} = %v, want %v", name, labels, got, want)
	}
}

// count is how many series of name carry every label of sub.
func (s series) count(name string, sub ...string) int {
	n := 0
	for k := range s[name] {
		if !slices.ContainsFunc(sub, func(l string) bool { return !strings.Contains(k, l) }) {
			n++
		}
	}
	return n
}

func judged(runID, tool string, result checks.Result, vs ...checks.Verdict) *reports.Summary {
	return &reports.Summary{Tool: tool, RunID: runID, Scenario: reports.ScenarioInfo{Name: "pay"}, Result: result, Verdicts: vs}
}

// TestPushReadBack pushes a judged scenario to a real Pushgateway and
// reads it back: the result of each invariant on each oracle, the run's
// result and info; a later run's interim pushes keep that result until
// its own end replaces the whole group.
func TestPushReadBack(t *testing.T) {
	testsvc.Need(t, testsvc.PushgatewayServer)
	gw := testsvc.Pushgateway(t)
	ctx := context.Background()
	target, _ := url.Parse("http://user:hunter2secret@api.example:8080/v1?token=abcdef")

	m := New()
	o := m.Observer("pay")
	o.AttemptDone(history.Attempt{Outcome: history.OK, Status: 201, End: time.Millisecond})
	o.OpDone(0, history.Acked)
	m.Observer("other").OpDone(0, history.Acked)
	m.Judged(judged("run-1", "idemcheck v1.2.3", checks.NotMet,
		checks.Verdict{Invariant: "exactly_once", Oracle: "ledger", Status: checks.Fail, Violations: 3},
		checks.Verdict{Invariant: "exactly_once", Oracle: "processor", Status: checks.Pass},
		checks.Verdict{Invariant: "same_response", Status: checks.Unknown},
	), []*url.URL{target})
	p, err := NewPusher(m, gw+"/", map[string]string{"instance": "staging"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, "pay"); err != nil {
		t.Fatalf("Push: %v", err)
	}

	s := scrape(t, gw+"/metrics")
	const group = `instance="staging",job="idemcheck"`
	key := func(labels string) string {
		return strings.Join(slices.Sorted(slices.Values(strings.Split(group+","+labels, ","))), ",")
	}
	// Two invariants of one check on two oracles are two series each.
	for _, c := range []struct {
		labels string
		want   float64
	}{
		{`invariant="exactly_once",oracle="ledger",result="not_met",scenario="pay"`, 1},
		{`invariant="exactly_once",oracle="ledger",result="met",scenario="pay"`, 0},
		{`invariant="exactly_once",oracle="ledger",result="inconclusive",scenario="pay"`, 0},
		{`invariant="exactly_once",oracle="processor",result="met",scenario="pay"`, 1},
		{`invariant="exactly_once",oracle="processor",result="not_met",scenario="pay"`, 0},
		{`invariant="same_response",result="inconclusive",scenario="pay"`, 1},
		{`invariant="same_response",result="met",scenario="pay"`, 0},
	} {
		s.has(t, "idemcheck_result", key(c.labels), c.want)
	}
	if n := s.count("idemcheck_result"); n != 9 {
		t.Errorf("idemcheck_result has %d series, want 9 (3 verdicts × met, not_met, inconclusive)", n)
	}
	s.has(t, "idemcheck_violations", key(`invariant="exactly_once",oracle="ledger",scenario="pay"`), 3)
	s.has(t, "idemcheck_violations", key(`invariant="exactly_once",oracle="processor",scenario="pay"`), 0)
	s.has(t, "idemcheck_run_result", key(`result="not_met",scenario="pay"`), 1)
	s.has(t, "idemcheck_run_result", key(`result="met",scenario="pay"`), 0)
	s.has(t, "idemcheck_run_info", key(`run_id="run-1",scenario="pay",target_host="api.example:8080",version="v1.2.3"`), 1)
	s.has(t, "idemcheck_ops_total", key(`scenario="pay",state="acked"`), 1)
	s.has(t, "idemcheck_attempts_total", key(`outcome="ok",scenario="pay",status="201"`), 1)
	for name, ss := range s {
		for labels := range ss {
			if strings.Contains(labels, "hunter2secret") || strings.Contains(labels, "abcdef") || strings.Contains(labels, "/v1") {
				t.Errorf("%s{%s} shows the target's password, query or path", name, labels)
			}
		}
	}
	if n := s.count("idemcheck_ops_total", `scenario="other"`); n != 0 {
		t.Errorf("the push of pay sent %d series of scenario other", n)
	}

	// The next run of pay, in a process of its own: its interim pushes
	// send its progress and keep the last run's result.
	m2 := New()
	o2 := m2.Observer("pay")
	for range 5 {
		o2.OpDone(0, history.Acked)
	}
	p2, err := NewPusher(m2, gw, map[string]string{"instance": "staging"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := p2.Every(ctx, "pay", 10*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for scrape(t, gw+"/metrics")["idemcheck_ops_total"][key(`scenario="pay",state="acked"`)] != 5 {
		if time.Now().After(deadline) {
			stop()
			t.Fatal("no interim push of 5 acked ops within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if failed, first := stop(); failed != 0 {
		t.Errorf("interim pushes: %d failed, the first: %v", failed, first)
	}
	s = scrape(t, gw+"/metrics")
	s.has(t, "idemcheck_result", key(`invariant="exactly_once",oracle="ledger",result="not_met",scenario="pay"`), 1)
	s.has(t, "idemcheck_run_info", key(`run_id="run-1",scenario="pay",target_host="api.example:8080",version="v1.2.3"`), 1)

	// Its end replaces the whole group: only its own verdicts remain.
	m2.Judged(judged("run-2", "idemcheck v1.2.4", checks.Met,
		checks.Verdict{Invariant: "exactly_once", Oracle: "ledger", Status: checks.Pass},
	), nil)
	if err := p2.Push(ctx, "pay"); err != nil {
		t.Fatalf("Push: %v", err)
	}
	s = scrape(t, gw+"/metrics")
	s.has(t, "idemcheck_result", key(`invariant="exactly_once",oracle="ledger",result="met",scenario="pay"`), 1)
	s.has(t, "idemcheck_result", key(`invariant="exactly_once",oracle="ledger",result="not_met",scenario="pay"`), 0)
	if n := s.count("idemcheck_result"); n != 3 {
		t.Errorf("idemcheck_result has %d series after the second run, want 3: the first run's are replaced", n)
	}
	s.has(t, "idemcheck_run_info", key(`run_id="run-2",scenario="pay",version="v1.2.4"`), 1)
	if n := s.count("idemcheck_run_info"); n != 1 {
		t.Errorf("idemcheck_run_info has %d series, want 1 (run-1's replaced)", n)
	}
	s.has(t, "idemcheck_run_result", key(`result="met",scenario="pay"`), 1)
	if n := s.count("idemcheck_attempts_total"); n != 0 {
		t.Errorf("idemcheck_attempts_total has %d series, want none: the second run made no attempt and its end replaced the group", n)
	}
}

// TestPushAuth checks that a password in the push URL is sent as basic
// auth and that the body is the scenario's series in the text format.
func TestPushAuth(t *testing.T) {
	var got struct {
		user, pass, path, method string
		ok                       bool
		mfs                      map[string]*dto.MetricFamily
		err                      error
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.user, got.pass, got.ok = r.BasicAuth()
		got.path, got.method = r.URL.Path, r.Method
		p := expfmt.NewTextParser(model.UTF8Validation)
		got.mfs, got.err = p.TextToMetricFamilies(r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword("ci", "hunter2secret")
	u.Path = "/gw"
	m := New()
	m.Judged(judged("run-1", "idemcheck dev", checks.Met, checks.Verdict{Invariant: "exactly_once", Status: checks.Pass}), nil)
	p, err := NewPusher(m, u.String(), nil, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.URL(), "hunter2secret") {
		t.Errorf("URL() = %q shows the password", p.URL())
	}
	if err := p.Push(context.Background(), "pay"); err != nil {
		t.Fatal(err)
	}
	if !got.ok || got.user != "ci" || got.pass != "hunter2secret" {
		t.Errorf("basic auth = %q, %q, %v, want ci, hunter2secret", got.user, got.pass, got.ok)
	}
	if got.method != http.MethodPut || got.path != "/gw/metrics/job/idemcheck/scenario/pay" {
		t.Errorf("push = %s %s, want PUT /gw/metrics/job/idemcheck/scenario/pay", got.method, got.path)
	}
	if got.err != nil || got.mfs["idemcheck_result"] == nil {
		t.Errorf("pushed body: %v, families %v; want idemcheck_result", got.err, slices.Sorted(func(yield func(string) bool) {
			for k := range got.mfs {
				if !yield(k) {
					return
				}
			}
		}))
	}
}

// TestPushRedacted checks that no message about a push URL shows its
// password.
func TestPushRedacted(t *testing.T) {
	const secret = "hunter2secret"
	m := New()
	for _, raw := range []string{
		"ftp://ci:" + secret + "@gw:9091",
		"http://ci:" + secret + "@gw:9091/?token=" + secret,
		"http://ci:" + secret + "@gw:9091/#" + secret,
		"http://ci:" + secret + "@gw:port",
		"http://ci:" + secret + "@",
	} {
		_, err := NewPusher(m, raw, nil, nil)
		if !errors.Is(err, ErrPushURL) {
			t.Errorf("NewPusher(%q) = %v, want ErrPushURL", raw, err)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("NewPusher(%q) = %q shows the secret", raw, err)
		}
	}
	// A push that fails (nothing listens on port 1) names the URL
	// without the password.
	p, err := NewPusher(m, "http://ci:"+secret+"@127.0.0.1:1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Push(context.Background(), "pay")
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Push to a closed port = %v, want an error naming 127.0.0.1:1 without the password", err)
	}
	// So does a push the gateway refuses.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword("ci", secret)
	p, err = NewPusher(m, u.String(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Push(context.Background(), "pay")
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "401") {
		t.Errorf("Push refused with 401 = %v, want an error with 401 without the password", err)
	}
}

func TestPushGrouping(t *testing.T) {
	m := New()
	for _, name := range []string{"result", "scenario", "job", "oracle", "__name", "9lives", "a-b", ""} {
		if _, err := NewPusher(m, "http://gw:9091", map[string]string{name: "x"}, nil); !errors.Is(err, ErrGrouping) {
			t.Errorf("NewPusher with grouping label %q = %v, want ErrGrouping", name, err)
		}
	}
	if _, err := NewPusher(m, "http://gw:9091", map[string]string{"instance": "staging", "team": "pay"}, nil); err != nil {
		t.Errorf("NewPusher with grouping instance, team = %v", err)
	}
}

func TestParseGrouping(t *testing.T) {
	got, err := ParseGrouping([]string{"instance=staging", "team=a=b", "empty="})
	if err != nil || len(got) != 3 || got["instance"] != "staging" || got["team"] != "a=b" || got["empty"] != "" {
		t.Errorf("ParseGrouping = %v, %v", got, err)
	}
	for _, bad := range [][]string{{"instance"}, {"a=1", "a=2"}} {
		if _, err := ParseGrouping(bad); !errors.Is(err, ErrGrouping) {
			t.Errorf("ParseGrouping(%q) = %v, want ErrGrouping", bad, err)
		}
	}
}
