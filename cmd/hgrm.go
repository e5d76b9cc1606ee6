package cmd

import (
	"fmt"

	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/trial"
)

// checkHGRM checks --hgrm before anything is sent: it belongs to a run
// in one process or to --phase judge (which measure the load), and its
// directory is made and must take a file.
func (opts *RunOptions) checkHGRM() error {
	if opts.HGRM == "" || opts.DryRun {
		return nil
	}
	if p := opts.Phases.Phase; p != "" && p != phaseJudge {
		return withHint(ExitUsage, fmt.Errorf("--hgrm does not apply to --phase %s, which measures nothing", p), "give it to --phase judge")
	}
	if err := trial.CheckWritable(opts.HGRM); err != nil {
		return withHint(ExitRuntime, fmt.Errorf("--hgrm %w", err), "choose a directory you can write to; nothing was sent")
	}
	return nil
}

// writeHGRM writes each run's attempt and op latency histograms to
// opts.HGRM (--hgrm), if given, named after their scenarios as the run
// directories are (trial.DirNames), and says where on stderr.
func (opts *RunOptions) writeHGRM(sums []*reports.Summary) error {
	if opts.HGRM == "" {
		return nil
	}
	names := make([]string, len(sums))
	for i, s := range sums {
		names[i] = s.Scenario.Name
	}
	n, err := reports.SaveHGRMs(opts.HGRM, trial.DirNames(names), sums)
	if n > 0 {
		fmt.Fprintf(opts.Streams.Err, "latency histograms (.hgrm) written to %s\n", opts.HGRM)
	}
	if err != nil {
		return fmt.Errorf("--hgrm: %w", err)
	}
	return nil
}
