package trial

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRunFileIn(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"out/history.jsonl":           "history.jsonl",
		"out/pay/report.json":         "report.json",
		"out/shard-0-of-4.jsonl":      "shard-0-of-4.jsonl",
		"out/idemcheck-spill-1.jsonl": "idemcheck-spill-1.jsonl",
		"out/summary.md":              "",
		"elsewhere/history.jsonl":     "",
		"out/../out2/report.json":     "",
	} {
		if got := RunFileIn("out", path); got != want {
			t.Errorf("RunFileIn(out, %s) = %q, want %q", path, got, want)
		}
	}
}

func TestCheckFileWritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := CheckFileWritable(filepath.Join(dir, "r.xml")); err != nil {
		t.Errorf("a new file in a writable directory: %v", err)
	}
	if err := CheckFileWritable(filepath.Join(dir, "no", "r.xml")); err == nil {
		t.Errorf("a file in a missing directory: no error")
	}
	if os.Geteuid() != 0 { // root writes anything
		ro := filepath.Join(dir, "ro")
		if err := os.WriteFile(ro, nil, 0o444); err != nil {
			t.Fatal(err)
		}
		if err := CheckFileWritable(ro); err == nil {
			t.Errorf("a read-only file: no error")
		}
	}
}
