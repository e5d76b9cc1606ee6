package trial

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// CalibrationRequests is how many plain requests a calibration sends.
const CalibrationRequests = 5

// ErrCalibration is wrapped by Prepare's error when a scenario's faults
// are relative to the target's latency and no plain request of the
// calibration was answered 2xx to measure it.
var ErrCalibration = errors.New("calibration failed")

// calibrate measures the target's latency before the load when a fault of
// the scenario is given relative to it (a timeout after: 0.5x), and
// resolves those faults for the load: CalibrationRequests plain requests
// of the operation, one at a time, with fresh keys (a random key nonce,
// so a rerun's calibration is not answered from its predecessor's keys),
// no fault and no retry, sent through the runner like the load's. They
// are not ops of the run's history: what they measured and what each
// relative parameter resolved to is its Meta.Calibration, so that a
// report shows it and a judge of the history sees the same values. A
// scenario with no relative parameter sends nothing.
//
// They run before the oracles' readings before the load, so that their
// effects (a charge each) are in those readings and never counted as the
// run's.
func (t *Trial) calibrate(ctx context.Context) error {
	if !faults.Relatives(t.sc.Faults) {
		return nil
	}
	var nonce [8]byte
	if _, err := crand.Read(nonce[:]); err != nil {
		return fmt.Errorf("calibration: %w", err)
	}
	if p, ok := t.opts.Observer.(interface{ Phase(string) }); ok {
		p.Phase(fmt.Sprintf("calibrating: %d plain requests measure the latency a relative timeout follows", CalibrationRequests))
	}
	sc := calibrationScenario(t.sc)
	o := t.ropts
	o.KeyNonce = binary.LittleEndian.Uint64(nonce[:]) | 1 // never 0: keys from the seed alone
	o.Observer, o.SpillAfter, o.Shard = nil, 0, history.Shard{}
	h, err := runner.Run(ctx, sc, o)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if h == nil {
		return fmt.Errorf("%w: %w", ErrCalibration, err)
	}
	c, lerr := calibrationOf(h)
	if lerr != nil {
		if err != nil {
			lerr = fmt.Errorf("%w (%w)", lerr, err)
		}
		return lerr
	}
	t.calibrated(c)
	return nil
}

// calibrationScenario is sc's operation sent CalibrationRequests times,
// one at a time, with no fault, retry or replay, under keys of its own:
// another name gives other generated keys, and a key template that does
// not use the run's token ({{.Run}}) would give the load's first keys, so
// it gives way to generated ones.
func calibrationScenario(sc *scenarios.Scenario) *scenarios.Scenario {
	c := *sc
	c.Name = sc.Name + "/calibration"
	c.Load = scenarios.Load{Ops: CalibrationRequests, Concurrency: 1, RequestTimeout: sc.Load.RequestTimeout}
	c.Retry.Attempts = 1
	c.Faults = nil
	c.Operation.Replay = nil
	if v := c.Operation.Key.Value; v != "" && !strings.Contains(v, ".Run") {
		c.Operation.Key.Value = ""
	}
	return &c
}

// calibrationOf is what the calibration's history measured: the latency
// of its 2xx answers. An error wraps ErrCalibration when none came.
func calibrationOf(h *history.History) (*history.Calibration, error) {
	var lat []time.Duration
	statuses := map[string]int{}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		switch {
		case a.Acked():
			lat = append(lat, a.End-a.Start)
		case a.Outcome == history.OK:
			statuses[fmt.Sprint(a.Status)]++
		default:
			statuses[a.Outcome.String()]++
		}
	}
	c := &history.Calibration{Requests: len(h.Attempts), Answered: len(lat), Resolved: []history.Resolved{}}
	if len(lat) == 0 {
		var got []string
		for s, n := range statuses {
			got = append(got, fmt.Sprintf("%s ×%d", s, n))
		}
		slices.Sort(got)
		return nil, fmt.Errorf("%w: none of %d plain requests was answered 2xx (%s): a fault relative to the target's latency needs it measured (or give it as a duration: after: 50ms)",
			ErrCalibration, c.Requests, strings.Join(got, ", "))
	}
	slices.Sort(lat)
	rank := func(p float64) time.Duration { // nearest rank
		i := int(float64(len(lat))*p+0.999999) - 1
		return lat[min(max(i, 0), len(lat)-1)]
	}
	c.P50, c.P90 = rank(0.5), rank(0.9)
	return c, nil
}

// calibrated resolves the scenario's relative fault parameters with c,
// recording each in c, and keeps c for the history (Load). The scenario
// is copied, not changed: the caller's stays as it was written.
func (t *Trial) calibrated(c *history.Calibration) {
	sc := *t.sc
	sc.Faults = slices.Clone(t.sc.Faults)
	c.Resolved = make([]history.Resolved, 0, len(sc.Faults))
	for i, f := range sc.Faults {
		if f.Relative.IsZero() {
			continue
		}
		sc.Faults[i] = f.Resolve(faults.Latency{P50: c.P50, P90: c.P90})
		c.Resolved = append(c.Resolved, history.Resolved{Fault: i, Kind: f.Kind, Param: "after", Relative: f.Relative.String(), Value: sc.Faults[i].After})
	}
	t.sc = &sc
	t.calibration = c
}
