package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/idemcheck/idemcheck/internal/redact"
)

// Job is the job label of every group Pusher pushes.
const Job = "idemcheck"

// PushTimeout bounds one push, from the request to the Pushgateway's answer.
const PushTimeout = 10 * time.Second

// labelNames are the label names of idemcheck's series. A grouping label
// may not be one of them (the Pushgateway would not know which to keep),
// nor job or scenario, which every group has.
var labelNames = []string{
	"job", "scenario", "outcome", "status", "fault", "state", "le",
	"invariant", "oracle", "result", "run_id", "version", "target_host",
}

// ErrPushURL is wrapped by NewPusher's error for a Pushgateway URL it
// cannot push to.
var ErrPushURL = errors.New("not a Pushgateway URL")

// ErrGrouping is wrapped by NewPusher's error for a grouping label it
// cannot use.
var ErrGrouping = errors.New("bad grouping label")

// Pusher pushes one scenario's metrics at a time to a Prometheus
// Pushgateway, with the official client library (client_golang's push
// package): a PUT of the scenario's series in the text exposition
// format to /metrics/job/idemcheck/scenario/NAME[/LABEL/VALUE...],
// which replaces what the group held.
//
// Each scenario is its own group, keyed by job="idemcheck" and
// scenario, plus the grouping labels given: a run of a scenario replaces
// the series of its last run, so the Pushgateway holds each scenario's
// latest result and an alert on it clears once a run passes. The run id
// is a label of idemcheck_run_info, not of the key: a group per run would
// pile up forever (the Pushgateway never forgets a group), and so would
// an old failed run's alert. The Pushgateway adds the group's labels to
// every series it serves, so the series read from it carry the same
// labels as the pull endpoint's; push_time_seconds says when the group
// was last pushed.
type Pusher struct {
	m        *Metrics
	url      string // without credentials, for the client and messages
	user     *url.Userinfo
	client   *http.Client
	grouping map[string]string
}

// NewPusher returns a Pusher of m's metrics to the Pushgateway at rawURL
// (http://pushgateway:9091, or with a path prefix), with grouping
// labels beside job and scenario (instance="staging"). A password in the
// URL is sent as basic auth, never shown. client sends the pushes; nil
// means a client of its own with PushTimeout.
func NewPusher(m *Metrics, rawURL string, grouping map[string]string, client *http.Client) (*Pusher, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %s: want http(s)://HOST:PORT", ErrPushURL, redact.String(rawURL))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: %s: a query or fragment has no place in it (the group's path is added to it)", ErrPushURL, redact.URL(u))
	}
	p := &Pusher{m: m, user: u.User, client: client, grouping: map[string]string{}}
	u.User = nil
	p.url = strings.TrimSuffix(u.String(), "/")
	for name, value := range grouping {
		if !model.LegacyValidation.IsValidLabelName(name) || strings.HasPrefix(name, "__") {
			return nil, fmt.Errorf("%w: %q is not a label name ([a-zA-Z_][a-zA-Z0-9_]*)", ErrGrouping, name)
		}
		if slices.Contains(labelNames, name) {
			return nil, fmt.Errorf("%w: %q is a label of idemcheck's series or of every group (job, scenario)", ErrGrouping, name)
		}
		p.grouping[name] = value
	}
	if p.client == nil {
		p.client = &http.Client{Timeout: PushTimeout}
	}
	return p, nil
}

// URL is the Pushgateway's URL, without credentials.
func (p *Pusher) URL() string { return p.url }

// Push replaces the group of scenario with its series as they stand:
// every series labelled scenario=NAME, without that label (the group
// key gives it back). It is the push of a scenario once judged.
func (p *Pusher) Push(ctx context.Context, scenario string) error {
	return p.push(ctx, scenario, true)
}

// push sends scenario's series: with replace, a PUT that replaces the
// whole group; without, a POST that replaces only the families it sends
// and keeps the others (the last run's result while this one runs).
func (p *Pusher) push(ctx context.Context, scenario string, replace bool) error {
	ctx, cancel := context.WithTimeout(ctx, PushTimeout)
	defer cancel()
	ps := push.New(p.url, Job).
		Gatherer(scenarioGatherer{p.m.reg, scenario}).
		Grouping("scenario", scenario).
		Format(expfmt.NewFormat(expfmt.TypeTextPlain)).
		Client(p.client)
	for name, value := range p.grouping {
		ps = ps.Grouping(name, value)
	}
	if p.user != nil {
		pass, _ := p.user.Password()
		ps = ps.BasicAuth(p.user.Username(), pass)
	}
	send := ps.AddContext
	if replace {
		send = ps.PushContext
	}
	if err := send(ctx); err != nil {
		return fmt.Errorf("pushing %s's metrics to %s: %w", scenario, p.url, err)
	}
	return nil
}

// Every pushes scenario's series every d while the scenario runs, until
// the returned stop is called or ctx ends. stop waits for a push in
// flight and returns how many pushes failed and the first failure.
//
// These interim pushes replace the families they send and keep the
// others: the group's idemcheck_result, idemcheck_run_result and
// idemcheck_run_info stay those of the scenario's last judged run until
// Push replaces the whole group, so an alert on them does not clear
// while a run is under way.
func (p *Pusher) Every(ctx context.Context, scenario string, d time.Duration) (stop func() (failed int, first error)) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg     sync.WaitGroup
		failed int
		first  error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := p.push(ctx, scenario, false); err != nil && ctx.Err() == nil {
				failed++
				if first == nil {
					first = err
				}
			}
		}
	}()
	return func() (int, error) {
		cancel()
		wg.Wait()
		return failed, first
	}
}

// scenarioGatherer gathers the series of one scenario, without their
// scenario label.
type scenarioGatherer struct {
	g        prometheus.Gatherer
	scenario string
}

func (s scenarioGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := s.g.Gather()
	out := make([]*dto.MetricFamily, 0, len(mfs))
	for _, mf := range mfs {
		var kept []*dto.Metric
		for _, m := range mf.GetMetric() {
			i := slices.IndexFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "scenario" })
			if i < 0 || m.GetLabel()[i].GetValue() != s.scenario {
				continue
			}
			kept = append(kept, &dto.Metric{
				Label: slices.Delete(slices.Clone(m.GetLabel()), i, i+1),
				Gauge: m.Gauge, Counter: m.Counter, Summary: m.Summary, Untyped: m.Untyped, Histogram: m.Histogram,
				TimestampMs: m.TimestampMs,
			})
		}
		if len(kept) > 0 {
			out = append(out, &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit, Metric: kept})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, err
}
