package cmd

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/pflag"

	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/metrics"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/runner"
)

// metricsFlags are run's Prometheus flags: --metrics-addr serves the
// run's metrics while it lasts, --metrics-push pushes them to a
// Pushgateway (docs/report.md).
type metricsFlags struct {
	Addr   string
	Push   string
	Every  time.Duration
	Labels []string // NAME=VALUE

	run *metrics.Run // nil without --metrics-addr or --metrics-push
}

func (f *metricsFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.Addr, "metrics-addr", "", "serve Prometheus metrics during the run at http://ADDR/metrics (attempts by outcome, status and fault; latency; ops; violations and result of each judged scenario), e.g. 127.0.0.1:9464")
	fl.StringVar(&f.Push, "metrics-push", "", "push the run's Prometheus metrics to the Pushgateway at `URL` (http://user:password@pushgateway:9091): each scenario's group (job=idemcheck, scenario) at its end, with idemcheck_result per invariant and oracle")
	fl.DurationVar(&f.Every, "metrics-every", 10*time.Second, "with --metrics-push, also push a running scenario's progress this often (0: only at its end)")
	fl.StringArrayVar(&f.Labels, "metrics-label", nil, "with --metrics-push, a grouping label `NAME=VALUE` beside job and scenario (instance=staging); repeat it for more")
}

func (f *metricsFlags) given() bool { return f.Addr != "" || f.Push != "" }

// check checks the flags before anything runs.
func (f *metricsFlags) check(changed func(string) bool) error {
	if f.Push == "" && (changed("metrics-every") || changed("metrics-label")) {
		return usageError("--metrics-every and --metrics-label need --metrics-push")
	}
	if f.Every < 0 {
		return usageError("--metrics-every must not be negative, got %s", f.Every)
	}
	if !f.given() {
		return nil
	}
	f.run = &metrics.Run{Metrics: metrics.New(), Every: f.Every}
	if f.Push != "" {
		grouping, err := metrics.ParseGrouping(f.Labels)
		if err == nil {
			f.run.Pusher, err = metrics.NewPusher(f.run.Metrics, f.Push, grouping, nil)
		}
		if err != nil {
			return withHint(ExitUsage, fmt.Errorf("--metrics-push: %w", err), "give the Pushgateway's base URL, e.g. http://pushgateway:9091, and grouping labels with --metrics-label NAME=VALUE")
		}
	}
	return nil
}

// start serves the metrics, when asked, until the returned close.
func (f *metricsFlags) start(errw io.Writer, red redaction.Options) (closeFn func(), err error) {
	closeFn = func() {}
	if f.run != nil && f.run.Pusher != nil {
		every := ""
		if f.Every > 0 {
			every = " and every " + f.Every.String()
		}
		fmt.Fprintf(errw, "metrics pushed to %s at each scenario's end%s\n", red.String(f.run.Pusher.URL()), every)
	}
	if f.Addr == "" {
		return closeFn, nil
	}
	ln, err := net.Listen("tcp", f.Addr)
	if err != nil {
		return closeFn, withHint(ExitUsage, fmt.Errorf("--metrics-addr %s: %w", f.Addr, err), "give a free host:port, e.g. 127.0.0.1:9464")
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", f.run.Metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(errw, "metrics at http://%s/metrics\n", ln.Addr())
	return func() { srv.Close() }, nil
}

// begin adds the metrics to a scenario's observer.
func (f *metricsFlags) begin(ctx context.Context, scenario string, obs runner.Observer) runner.Observer {
	if f.run == nil {
		return obs
	}
	return runner.Observers{obs, f.run.Begin(ctx, scenario)}
}

// end records a scenario's summary and pushes it: a failed interim push
// is a warning, a failed last push an error (exit 4: the result is lost).
func (f *metricsFlags) end(ctx context.Context, errw io.Writer, s *reports.Summary, targets []*url.URL) error {
	if f.run == nil {
		return nil
	}
	failed, first, err := f.run.End(ctx, s, targets)
	if failed > 0 {
		fmt.Fprintf(errw, "warning: %d interim metrics pushes failed, the first: %v\n", failed, first)
	}
	return withCode(ExitRuntime, err)
}
