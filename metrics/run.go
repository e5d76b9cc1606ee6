package metrics

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/reports"
)

// Run is the metrics of one command's run, scenario after scenario:
// Begin before a scenario's load, End once it is judged (or could not
// run).
type Run struct {
	Metrics *Metrics
	// Pusher pushes each scenario's group; nil for none.
	Pusher *Pusher
	// Every is the interval of a running scenario's interim pushes; 0 for
	// none.
	Every time.Duration

	stop func() (int, error) // the running scenario's interim pushes
}

// Begin starts a scenario's interim pushes and returns the observer that
// feeds its attempts and ops into the metrics.
func (r *Run) Begin(ctx context.Context, scenario string) *Observer {
	if r.Pusher != nil && r.Every > 0 {
		r.stop = r.Pusher.Every(ctx, scenario, r.Every)
	}
	return r.Metrics.Observer(scenario)
}

// End records a scenario's summary (Judged), stops its interim pushes
// and pushes its group a last time, even when ctx is done (an
// interrupted run's result is pushed too). It returns how many interim
// pushes failed and the first failure, and the last push's error.
func (r *Run) End(ctx context.Context, s *reports.Summary, targets []*url.URL) (interimFailed int, firstInterim, err error) {
	r.Metrics.Judged(s, targets)
	if r.stop != nil {
		interimFailed, firstInterim = r.stop()
		r.stop = nil
	}
	if r.Pusher != nil {
		err = r.Pusher.Push(context.WithoutCancel(ctx), s.Scenario.Name)
	}
	return interimFailed, firstInterim, err
}

// ParseGrouping reads grouping labels given as NAME=VALUE, each name
// once, for NewPusher (which checks the names).
func ParseGrouping(args []string) (map[string]string, error) {
	grouping := make(map[string]string, len(args))
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if _, dup := grouping[name]; !ok || dup {
			return nil, fmt.Errorf("%w: %q: want NAME=VALUE, each NAME once", ErrGrouping, a)
		}
		grouping[name] = value
	}
	return grouping, nil
}
