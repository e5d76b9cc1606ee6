package reports

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

func TestSaveRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	sum := NotRun("idemcheck test", "charges", "", time.Time{}, errors.New("boom"))
	if err := SaveRun(dir, sum, &history.History{}); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"report.html": "<!DOCTYPE html>", "report.json": `"format_version"`, "history.jsonl": ""} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v, want it to hold %q\n%.200s", file, err, want, b)
		}
	}
}
