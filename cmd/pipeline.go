package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// execOptions tune one scenario's execution.
type execOptions struct {
	Target string // overrides the scenario's target when set
	// Targets, when set, are every target of the run (replicas).
	Targets        []string
	RequestTimeout time.Duration // 0: the scenario's load.request_timeout
	Seed           uint64
	KeyNonce       uint64 // mixed into generated keys; 0 for keys from the seed alone
	Out            string // directory for report.json and history.jsonl; "" writes nothing
	Transport      http.RoundTripper
	Getenv         func(string) string
	Observer       runner.Observer
	FailOn         string // "medium": a deviation from the profile fails the run
}

// execution is what one scenario's run produced.
type execution struct {
	Summary *reports.Summary
	History *history.History
	Code    ExitCode
	Err     error // a runtime problem beside the verdicts (unreachable target, report not written)
}

// execute runs one scenario through trial.Run and turns what it returns
// into a summary, an exit code and saved files. It returns an error only
// for problems that leave nothing to report (bad config, unreachable
// target); an interrupted or failed run still writes what it saw.
func execute(ctx context.Context, sc *scenarios.Scenario, o execOptions) (*execution, error) {
	j, err := trial.Run(ctx, sc, trial.Options{Target: o.Target, Targets: o.Targets, RequestTimeout: o.RequestTimeout, Seed: o.Seed, KeyNonce: o.KeyNonce,
		Transport: o.Transport, Getenv: o.Getenv, Observer: o.Observer, FailOn: o.FailOn})
	if err != nil {
		return nil, prepareError(err)
	}
	sum := summarize(j)
	ex := &execution{Summary: sum, History: j.History, Code: resultCode(sum.Result)}
	switch {
	case errors.Is(j.Err, context.Canceled):
		ex.Code, ex.Err = ExitInterrupted, j.Err
	case j.Err != nil: // runner.ErrTarget among them
		ex.Code, ex.Err = ExitRuntime, j.Err
	}
	if o.Out != "" {
		if err := writeRun(o.Out, sum, j.History); err != nil {
			ex.Code = worst(ex.Code, ExitRuntime)
			ex.Err = errors.Join(ex.Err, err)
		}
	}
	return ex, nil
}

// prepareError gives a failed trial.Prepare its exit code and hint.
func prepareError(err error) error {
	var te *trial.TargetError
	var se *runner.SetupError
	switch {
	case errors.Is(err, trial.ErrConfig):
		return withCode(ExitUsage, err) // the diagnostic carries its hint
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return withCode(ExitInterrupted, err)
	case errors.As(err, &se):
		return withHint(ExitRuntime, err, "the target answered a setup request with an error: check its method and path in the scenario's setup, and that the API allows it")
	case errors.As(err, &te):
		hint := fmt.Sprintf("is the API running at %s?", te.Target)
		if te.Loopback {
			if u, perr := urlHost(te.Target); perr == nil {
				hint += fmt.Sprintf(" Start the built-in lab with 'idemcheck lab --addr %s'", u)
			}
		}
		if te.NotHTTP {
			hint = "the target answered, but not in HTTP: is that the API's port, and the right scheme (http:// or https://)?"
		}
		return withHint(ExitRuntime, err, hint)
	}
	return withCode(ExitRuntime, err)
}

// summarize is the report's summary of a judged run.
func summarize(j *trial.Judged) *reports.Summary {
	return reports.New("idemcheck "+Version, j.History, j.Measures, j.Judgement)
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

// writeFile writes path atomically: into a temporary file beside it,
// renamed over path only when the whole was written, so a reader never
// sees half a file and a failed write leaves the old one.
func writeFile(path string, write func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := write(f); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func resultCode(r checks.Result) ExitCode {
	switch r {
	case checks.Met:
		return ExitOK
	case checks.Inconclusive:
		return ExitInconclusive
	}
	return ExitFailed
}

// urlHost is the host:port of a base URL, for hints.
func urlHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}

// failOnFlag validates --fail-on: "" (a duplicate effect, a leak, a stuck
// key or a wrong replay fails) or "medium" (a deviation from the profile
// fails too).
func failOnFlag(v string) error {
	switch v {
	case "", "high", checks.SeverityMedium:
		return nil
	}
	return withHint(ExitUsage, fmt.Errorf("--fail-on %q: unknown severity", v),
		"use --fail-on medium to fail on deviations from the profile too (the default fails on critical and high only)")
}
