package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SaveHGRM writes a run's two histograms, and nothing for a run that did
// not run.
func TestSaveHGRM(t *testing.T) {
	dir := t.TempDir()
	s := fixture(t)
	if err := SaveHGRM(dir, "charges", s); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"charges.attempt.hgrm", "charges.op.hgrm"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "1/(1-Percentile)") || !strings.Contains(string(b), "#[Max") {
			t.Errorf("%s is no percentile distribution:\n%s", name, b)
		}
	}
	if err := SaveHGRM(dir, "none", NotRun("t", "x", "", s.Started, os.ErrNotExist)); err != nil {
		t.Errorf("SaveHGRM(not run) = %v, want nothing written", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.op.hgrm")); err == nil {
		t.Error("a run that did not run wrote a histogram")
	}
}
