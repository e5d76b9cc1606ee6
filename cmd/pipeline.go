package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/atomicfile"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// execOptions tune one scenario's execution: its trial, and where and
// how it is saved.
type execOptions struct {
	trial.Options
	Out string // directory for report.json and history.jsonl; "" writes nothing
	// Base is the --out the user gave, of which Out may be a
	// subdirectory: no link below it is followed (trial.NoSymlinkBelow).
	Base string
	// Rerun is the command line that repeats the run (history.Meta.Rerun).
	Rerun string
	// Errs hears where an interrupted run saved its load's history; nil
	// hears nothing.
	Errs io.Writer
}

// defaultSpillAfter is how many attempts a run keeps in memory before its
// history goes to disk: about 160 MB.
const defaultSpillAfter = 1_000_000

// execution is what one scenario's run produced.
type execution struct {
	Summary *reports.Summary
	History *history.History
	Code    ExitCode
	Err     error // a runtime problem beside the verdicts (unreachable target, report not written)
	// Written is true when the run's files were written to execOptions.Out.
	Written bool
}

// execute runs one scenario through trial.Run and concludes it. It
// returns an error only for problems that leave nothing to report (bad
// config, unreachable target); an interrupted or failed run still writes
// what it saw.
func execute(ctx context.Context, sc *scenarios.Scenario, o execOptions) (*execution, error) {
	if o.Out != "" {
		o.Checkpoint = func(h *history.History) { checkpoint(o, h) }
	}
	j, err := trial.Run(ctx, sc, o.Options)
	if err != nil {
		return nil, prepareError(err)
	}
	return conclude(ctx, sc.Name, j, o), nil
}

// conclude turns the judged run of scenario name into a summary, an exit
// code and saved files (in o.Out), and removes its spilled history.
func conclude(ctx context.Context, name string, j *trial.Judged, o execOptions) *execution {
	defer j.History.Spill.Remove()
	j.History.Meta.Rerun = o.Rerun
	sum := summarize(j)
	ex := &execution{Summary: sum, History: j.History, Code: resultCode(sum.Result)}
	switch {
	case errors.Is(j.Err, context.Canceled):
		ex.Code, ex.Err = ExitInterrupted, j.Err
	case errors.Is(j.Err, runner.ErrTarget) && sum.Result == checks.NotMet:
		// No attempt got an answer the client could read (a malformed
		// header, say), yet the state shows a violation: a failed
		// verdict is 1 whatever the attempts' outcomes; the error says
		// what the client saw.
		ex.Err = j.Err
	case errors.Is(j.Err, runner.ErrTarget) && sum.Result != checks.NotMet:
		// The target answered before the load (setup or preflight) but
		// not one attempt of the operation: nothing was judged, which the
		// result already says (inconclusive); the error says why.
		ex.Code, ex.Err = ExitInconclusive, fmt.Errorf("%w (it answered before the load: is the operation's method and path right, or is it hanging?)", j.Err)
	case j.Err != nil: // runner.ErrTarget among them
		ex.Code, ex.Err = ExitRuntime, j.Err
	}
	if ctx.Err() != nil && ex.Code != ExitInterrupted {
		// Interrupted after the load (in the quiet period, during the
		// reads): whatever the verdicts, the run did not finish.
		ex.Code = ExitInterrupted
		ex.Err = errors.Join(ex.Err, fmt.Errorf("%s: interrupted: %w", name, context.Canceled))
	}
	var se *runner.SpillError
	if errors.As(j.Err, &se) {
		// The load's record is not whole: report what was sent, judge
		// nothing, and write no history.jsonl (it would be a run that
		// never was).
		reports.Lost(sum, se.Ops, se.Attempts, se.Error())
		ex.Code = worst(ExitRuntime, ex.Code)
		ex.Err = fmt.Errorf("%w; give the run a disk with room with --tmp-dir (a history takes about 250 bytes an attempt past --spill-after)", ex.Err)
	}
	if o.Out != "" && errors.Is(j.Err, history.ErrSpill) {
		ex.Err = fmt.Errorf("%w; nothing written to %s", ex.Err, o.Out)
	} else if o.Out != "" {
		if err := saveRun(o.Base, o.Out, sum, j.History); err != nil {
			ex.Code = worst(ex.Code, ExitRuntime)
			ex.Err = errors.Join(ex.Err, err)
		} else {
			ex.Written = true
		}
	}
	return ex
}

// checkpoint saves the history of an interrupted run's load to o.Out as
// soon as the interrupt comes, before the state is read: a second
// interrupt ends the process at once, and the load's record stays. The
// run's end writes it again, with its readings.
func checkpoint(o execOptions, h *history.History) {
	h.Meta.Rerun = o.Rerun
	path, err := trial.SaveCheckpoint(o.Base, o.Out, h)
	switch {
	case o.Errs == nil:
	case err != nil:
		fmt.Fprintf(o.Errs, "interrupted: the load's history could not be saved: %v\n", err)
	default:
		fmt.Fprintf(o.Errs, "interrupted: the load's history is saved to %s; reading the state (Ctrl-C again to stop at once)\n", path)
	}
}

// prepareError gives a failed trial.Prepare its exit code; its hint
// comes with it (trial.TargetError, trial.ReadingError,
// runner.SetupError, a diagnostic of the scenario).
func prepareError(err error) error {
	switch {
	case errors.Is(err, trial.ErrConfig):
		return withCode(ExitUsage, err)
	case errors.Is(err, context.Canceled):
		return withCode(ExitInterrupted, err)
	case errors.Is(err, context.DeadlineExceeded):
		// A request of the preflight or the setup ran out of time: the
		// target is there but did not answer, no signal came.
		return withHint(ExitRuntime, err, "the target did not answer within the request timeout (--request-timeout, load.request_timeout); nothing of the load was sent")
	}
	return withCode(ExitRuntime, err)
}

// summarize is the report's summary of a judged run.
func summarize(j *trial.Judged) *reports.Summary {
	return reports.NewFrom("idemcheck "+Version, j.History.Meta, j.History.Readings, j.Measures, j.Judgement, j.Charts)
}

// saveRun writes a run's files into dir, below base (--out), which no
// symbolic link may lead out of.
func saveRun(base, dir string, sum *reports.Summary, h *history.History) error {
	if err := trial.NoSymlinkBelow(base, dir); err != nil {
		return err
	}
	return reports.SaveRun(dir, sum, h)
}

// checkOut makes dir and checks that a file can be written in it
// (trial.CheckWritable), so that an unwritable --out is found before any
// request is sent.
func checkOut(dir string) error {
	if err := trial.CheckWritable(dir); err != nil {
		return withHint(ExitRuntime, fmt.Errorf("--out %w", err), "choose a directory you can write to; nothing was sent")
	}
	return nil
}

// writeFile writes path whole or not at all (atomicfile.Write).
func writeFile(path string, write func(*os.File) error) error { return atomicfile.Write(path, write) }

func resultCode(r checks.Result) ExitCode {
	switch r {
	case checks.Met:
		return ExitOK
	case checks.Inconclusive:
		return ExitInconclusive
	}
	return ExitFailed
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
