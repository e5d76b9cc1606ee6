package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	if err := Write(path, func(f *os.File) error { _, err := f.WriteString("old"); return err }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := Write(path, func(f *os.File) error { f.WriteString("half"); return boom }); !errors.Is(err, boom) {
		t.Errorf("Write with a failing writer = %v, want boom", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("after a failed write the file holds %q, want the old one", b)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("files left: %v, want a.json alone", left)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode(), err)
	}
}
