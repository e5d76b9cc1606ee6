package reports

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/atomicfile"
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
