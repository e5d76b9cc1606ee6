//go:build unix

package atomicfile

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A path that is not a regular file is written through, never replaced:
// a symlink keeps pointing where it did (its target gets the content), a
// FIFO stays a FIFO and its reader gets the content, /dev/null stays a
// device.
func TestWritePaths(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) func(*os.File) error {
		return func(f *os.File) error { _, err := f.WriteString(s); return err }
	}

	target := filepath.Join(dir, "target.xml")
	link := filepath.Join(dir, "link.xml")
	if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, write("new")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v, %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("the symlink's target holds %q, want new", b)
	}

	dangling := filepath.Join(dir, "dangling.xml")
	if err := os.Symlink(filepath.Join(dir, "made.xml"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := Write(dangling, write("made")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "made.xml")); string(b) != "made" {
		t.Errorf("a link to nothing: its target holds %q, want made", b)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	if err := Write(fifo, write("through the pipe")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the pipe" {
		t.Errorf("the FIFO's reader got %q", s)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v, %v", fi.Mode(), err)
	}

	if err := Write(os.DevNull, write("gone")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(os.DevNull); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a character device: %v, %v", os.DevNull, fi.Mode(), err)
	}
	if err := Write(dir, write("x")); err == nil {
		t.Error("Write to a directory = nil error")
	}
}
