package testfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestSmallDiskFills(t *testing.T) {
	dir := SmallDisk(t, 64<<10)
	err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 1<<20), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("writing 1 MiB to a 64 KiB disk: %v, want ENOSPC", err)
	}
}

func TestReadOnlyDir(t *testing.T) {
	dir := ReadOnlyDir(t)
	if f, err := os.CreateTemp(dir, "x"); err == nil {
		f.Close()
		t.Errorf("created %s in a read-only directory", f.Name())
	}
}
