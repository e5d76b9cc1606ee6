package reports

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/atomicfile"
	"github.com/idemcheck/idemcheck/measure"
)

// SaveRun writes a judged run's files to dir, each whole or not at all: its
// history (history.jsonl, which check and report judge and render again)
// and its report sum as HTML and JSON (report.html, report.json).
func SaveRun(dir string, sum *Summary, h *history.History) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, "history.jsonl"), func(f *os.File) error { return history.Encode(f, h) }); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "report.html"), func(f *os.File) error {
		return WriteHTML(f, []*Summary{sum})
	}); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "report.json"), func(f *os.File) error {
		return WriteJSON(f, []*Summary{sum})
	})
}

// SaveAudit writes an audit's files to dir, each whole or not at all: its
// history (history.jsonl, which check judges again to the same
// scorecard), and the scorecard as HTML, with the history's timeline, and
// as JSON (report.html, scorecard.json).
func SaveAudit(dir string, h *history.History, card *checks.Scorecard) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing the audit: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, "history.jsonl"), func(f *os.File) error { return history.Encode(f, h) }); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "report.html"), func(f *os.File) error {
		return WriteScorecard(f, "html", card, h, Options{})
	}); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "scorecard.json"), func(f *os.File) error {
		return WriteScorecard(f, "json", card, nil, Options{})
	})
}

// Lost makes sum the summary of a run whose history could not be written
// to disk: what was sent (ops and attempts, counted as they were sent),
// and nothing judged, for why.
func Lost(sum *Summary, ops, attempts int, why string) {
	sum.Load = measure.Load{Ops: ops, Attempts: attempts}
	sum.Faults, sum.Statuses, sum.Errors = []measure.FaultCount{}, []measure.Count{}, []measure.Count{}
	sum.Latency = Latency{}
	sum.Verdicts, sum.Thresholds, sum.Findings = []checks.Verdict{}, []checks.Threshold{}, []checks.Finding{}
	sum.Result, sum.Why = checks.Inconclusive, "nothing judged: "+why
	sum.Charts = nil
}
