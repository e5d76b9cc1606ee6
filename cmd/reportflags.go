package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/trial"
)

// reportFlags choose the report files a command writes besides its report
// on stdout, the same way in every command that reports a run (run,
// check, demo, audit, bench):
//
//	--report junit=junit.xml --report markdown="$GITHUB_STEP_SUMMARY" --report html=report.html
//
// Usage in a command:
//
//	var reps reportFlags
//	reps.register(c.Flags())                 // in NewCmdX
//	if err := reps.resolve(); err != nil {…} // in RunE, before the run
//	err := reps.write(sums)                  // after the run, whatever its result
//	err := reps.writeNotRun(name, target, e) // when the run could not start
type reportFlags struct {
	// Specs are the --report values, FORMAT=PATH.
	Specs []string
	// Inconclusive is --junit-inconclusive: error (default) or failure.
	Inconclusive string

	files []reportFile
	opts  reports.Options
	// noFS skips the checks of the files' directories (Validate).
	noFS bool
	// wrote is true once write was called: writeNotRun then writes
	// nothing over the reports of what ran.
	wrote bool
}

// reportFile is one resolved --report.
type reportFile struct {
	Format string
	Path   string
	write  reports.WriteFunc
}

// register adds --report and --junit-inconclusive to fs.
func (r *reportFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&r.Specs, "report", nil, "also write a report file, FORMAT=PATH, repeatable: "+strings.Join(reports.Formats(), ", ")+
		` (e.g. --report junit=junit.xml --report markdown="$GITHUB_STEP_SUMMARY" --report html=report.html); written even when a check fails, and a junit or markdown file says why when the run could not start`)
	fs.StringVar(&r.Inconclusive, "junit-inconclusive", reports.JUnitError, "what an inconclusive check is in JUnit reports: error or failure (never skipped, which CI draws green)")
}

// resolve checks every --report before anything runs, so a typo costs no
// run: a known format, a path, a directory that exists, no path twice.
func (r *reportFlags) resolve() error {
	r.opts = reports.Options{JUnitInconclusive: r.Inconclusive}
	r.files = nil
	seen := map[string]string{}
	for _, spec := range r.Specs {
		format, path, ok := strings.Cut(spec, "=")
		format = strings.ToLower(strings.TrimSpace(format))
		if !ok || format == "" || path == "" {
			return withHint(ExitUsage, fmt.Errorf("--report %q: want FORMAT=PATH", spec),
				"e.g. --report junit=junit.xml --report html=report.html; formats: "+strings.Join(reports.Formats(), ", "))
		}
		w, err := reports.WriterFor(format, r.opts)
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("--report %s: %w", spec, err))
		}
		if path == "-" {
			return withHint(ExitUsage, fmt.Errorf("--report %s: stdout carries the --format report", spec),
				"use --format "+format+" for stdout, --report for files")
		}
		clean := filepath.Clean(path)
		if other, dup := seen[clean]; dup {
			return usageError("--report %s and --report %s write the same file", other, spec)
		}
		seen[clean] = spec
		if r.noFS {
			// Validate: the files are on another machine.
		} else if fi, err := os.Stat(filepath.Dir(clean)); err != nil || !fi.IsDir() {
			return withHint(ExitUsage, fmt.Errorf("--report %s: no directory %s", spec, filepath.Dir(clean)),
				"create it first (mkdir -p), or write the report elsewhere")
		}
		if fi, err := os.Stat(clean); !r.noFS && err == nil && fi.IsDir() {
			return usageError("--report %s: %s is a directory", spec, clean)
		}
		if !r.noFS {
			if err := trial.CheckFileWritable(clean); err != nil {
				return withHint(ExitRuntime, fmt.Errorf("--report %s: %w", spec, err), "write the report where you can write; nothing was sent")
			}
		}
		r.files = append(r.files, reportFile{Format: format, Path: path, write: w})
	}
	if _, err := reports.WriterFor("junit", r.opts); err != nil {
		return withCode(ExitUsage, fmt.Errorf("--junit-inconclusive: %w", err))
	}
	return nil
}

// writer is the writer of --format's report on stdout, tuned as the
// files are (--junit-inconclusive).
func (r *reportFlags) writer(format string) (reports.WriteFunc, error) {
	return reports.WriterFor(format, reports.Options{JUnitInconclusive: r.Inconclusive})
}

// refuseRunFiles refuses a --report that would write over one of the
// files the run writes in out (or a directory below it), which the run
// would then overwrite or lose: --report json=OUT/history.jsonl leaves no
// history for check.
func (r *reportFlags) refuseRunFiles(out string) error {
	if out == "" {
		return nil
	}
	for _, f := range r.files {
		if name := trial.RunFileIn(out, f.Path); name != "" {
			return withHint(ExitUsage, fmt.Errorf("--report %s=%s: %s is a file the run writes in --out %s", f.Format, f.Path, name, out),
				"write the report under another name, or outside --out; nothing was sent")
		}
	}
	return nil
}

// write writes every --report file from ss, each atomically; it tries
// them all and returns their errors as a runtime error (exit 4: a report
// was not written).
func (r *reportFlags) write(ss []*reports.Summary) error {
	r.wrote = true
	return r.writeFiles(ss)
}

// writeFiles writes every --report file from ss (write).
func (r *reportFlags) writeFiles(ss []*reports.Summary) error {
	var errs []error
	for _, f := range r.files {
		if err := writeFile(f.Path, func(out *os.File) error { return f.write(out, ss) }); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return withCode(ExitRuntime, errors.Join(errs...))
	}
	return nil
}

// writeNotRun writes every --report file for a run that could not start
// (bad configuration, an unreachable target): one scenario named name
// (or "idemcheck"), an error case in JUnit, a ❌ with the reason in
// Markdown, so CI shows why instead of finding no file. cause is the
// error the command exits with; the returned error is only about writing.
func (r *reportFlags) writeNotRun(name, target string, cause error) error {
	if len(r.files) == 0 || cause == nil || r.wrote {
		return nil
	}
	if target != "" {
		target = redactArg(target)
	}
	return r.writeFiles([]*reports.Summary{reports.NotRun("idemcheck "+Version, name, target, time.Now(), cause)})
}

// writeScorecard writes an audit's scorecard (with its history h, nil
// for none) on out in format, then into every --report file.
func (r *reportFlags) writeScorecard(out io.Writer, format string, card *checks.Scorecard, h *history.History) error {
	o := reports.Options{JUnitInconclusive: r.Inconclusive}
	if err := reports.WriteScorecard(out, format, card, h, o); err != nil {
		return withCode(ExitRuntime, fmt.Errorf("writing the scorecard: %w", err))
	}
	for _, f := range r.files {
		if err := writeFile(f.Path, func(w *os.File) error { return reports.WriteScorecard(w, f.Format, card, h, o) }); err != nil {
			return withCode(ExitRuntime, err)
		}
	}
	return nil
}
