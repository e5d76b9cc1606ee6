package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// execOptions tune one scenario's execution.
type execOptions struct {
	Target    string // overrides the scenario's target when set
	Seed      uint64
	KeyNonce  uint64 // mixed into generated keys; 0 for keys from the seed alone
	Out       string // directory for report.json and history.jsonl; "" writes nothing
	Transport http.RoundTripper
	Getenv    func(string) string
	Observer  runner.Observer
}

// observeTimeout bounds the oracles' reads after a run.
const observeTimeout = time.Minute

// execution is what one scenario's run produced.
type execution struct {
	Summary *reports.Summary
	History *history.History
	Code    ExitCode
	Err     error // a runtime problem beside the verdicts (unreachable target, report not written)
}

// execute runs one scenario end to end: setup, oracles before, load, quiet
// period, oracles after, checks, summary, files. It returns an error only for
// problems that leave nothing to report (bad config); everything else is in
// the execution, so an interrupted or failed run still writes what it saw.
func execute(ctx context.Context, sc *scenarios.Scenario, o execOptions) (*execution, error) {
	target, err := sc.TargetURL(o.Target)
	if err != nil {
		return nil, withCode(ExitUsage, fmt.Errorf("%s: %w", sc.Name, err)) // the diagnostic carries its hint
	}
	client := &http.Client{Transport: o.Transport, Timeout: 30 * time.Second}
	oracles, err := buildOracles(sc, target, client, o.Getenv)
	if err != nil {
		return nil, withCode(ExitUsage, fmt.Errorf("%s: %w", sc.Name, err))
	}
	ropts := runner.Options{Target: target, Seed: o.Seed, KeyNonce: o.KeyNonce, Transport: o.Transport, Env: o.Getenv, Observer: o.Observer}
	if err := preflight(ctx, sc, target, client, ropts); err != nil {
		if ctx.Err() != nil {
			return nil, withCode(ExitInterrupted, ctx.Err())
		}
		hint := fmt.Sprintf("is the API running at %s?", target.Redacted())
		if isLoopback(target.Hostname()) {
			hint += fmt.Sprintf(" Start the built-in lab with 'idemcheck lab --addr %s'", target.Host)
		}
		if strings.Contains(err.Error(), "malformed HTTP") || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
			hint = "the target answered, but not in HTTP: is that the API's port, and the right scheme (http:// or https://)?"
		}
		return nil, withHint(ExitRuntime, fmt.Errorf("%s: %w", sc.Name, err), hint)
	}
	before := map[string]error{}
	for _, or := range oracles {
		if err := or.Before(ctx); err != nil {
			before[or.Name()] = err
		}
	}

	h, runErr := runner.Run(ctx, sc, ropts)
	if h == nil {
		h = &history.History{Meta: history.Meta{Scenario: sc.Name, Target: target.Redacted(), Seed: o.Seed, KeyNonce: o.KeyNonce}}
	}
	// The oracles read after the load even when it was interrupted: the
	// report must say what was done. They get their own deadline.
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), observeTimeout)
	defer cancel()
	// The quiet period lets work the client gave up on finish before the
	// state is read. An interrupted run still waits, briefly, for the
	// attempts it cancelled.
	quiet := time.Duration(sc.Quiet)
	if ctx.Err() != nil {
		quiet = min(quiet, 2*time.Second)
	}
	sleep(octx, quiet)
	obs := map[string]*checks.Observation{}
	var obsList []*checks.Observation
	for _, or := range oracles {
		ob := &checks.Observation{Oracle: or.Name()}
		if err := before[or.Name()]; err != nil {
			ob.Err = "reading before the run: " + err.Error()
		} else {
			ob = checks.Observe(octx, or, h)
		}
		obs[or.Name()] = ob
		obsList = append(obsList, ob)
	}
	verdicts := checks.Run(h, invariants(sc), obs)
	sum := reports.Build(h, reports.Input{
		Tool:         "idemcheck " + Version,
		Scenario:     scenarioInfo(sc, target),
		Verdicts:     verdicts,
		Observations: obsList,
		Limits:       limits(sc),
	})
	ex := &execution{Summary: sum, History: h, Code: resultCode(sum.Result)}
	switch {
	case errors.Is(runErr, context.Canceled) || (runErr != nil && ctx.Err() != nil):
		ex.Code, ex.Err = ExitInterrupted, fmt.Errorf("%s: interrupted: %w", sc.Name, context.Canceled)
	case runErr != nil: // runner.ErrTarget among them
		ex.Code, ex.Err = ExitRuntime, fmt.Errorf("%s: %w", sc.Name, runErr)
	}
	if o.Out != "" {
		if err := writeRun(o.Out, sum, h); err != nil {
			ex.Code = worst(ex.Code, ExitRuntime)
			ex.Err = errors.Join(ex.Err, err)
		}
	}
	return ex, nil
}

// preflight runs the setup requests, or, when there are none, checks that
// the target answers HTTP at all, so an unreachable target is a runtime
// error (exit 4) before any load is sent.
func preflight(ctx context.Context, sc *scenarios.Scenario, target *url.URL, client *http.Client, ropts runner.Options) error {
	if len(sc.Setup) > 0 {
		return runner.Setup(ctx, sc, ropts)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("target %s unreachable: %w", target.Redacted(), err)
	}
	resp.Body.Close()
	return nil
}

func writeRun(dir string, sum *reports.Summary, h *history.History) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	if err := writeFile(filepath.Join(dir, "history.jsonl"), func(f *os.File) error { return history.Encode(f, h) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "report.json"), func(f *os.File) error {
		return reports.WriteJSON(f, []*reports.Summary{sum})
	})
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func resultCode(r reports.Result) ExitCode {
	switch r {
	case reports.Met:
		return ExitOK
	case reports.Inconclusive:
		return ExitInconclusive
	}
	return ExitFailed
}

func invariants(sc *scenarios.Scenario) []checks.Invariant {
	out := make([]checks.Invariant, len(sc.Invariants))
	for i, inv := range sc.Invariants {
		out[i] = checks.Invariant{Check: inv.Check, Oracle: inv.Oracle}
	}
	return out
}

func scenarioInfo(sc *scenarios.Scenario, target *url.URL) reports.ScenarioInfo {
	return reports.ScenarioInfo{Name: sc.Name, Description: sc.Description, Source: sc.Source, Expect: string(sc.Expect), Target: target.Redacted()}
}

func limits(sc *scenarios.Scenario) reports.Limits {
	t := sc.Thresholds
	return reports.Limits{P50: time.Duration(t.P50), P90: time.Duration(t.P90), P99: time.Duration(t.P99),
		P999: time.Duration(t.P999), Max: time.Duration(t.Max), ErrorRate: t.ErrorRate}
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
