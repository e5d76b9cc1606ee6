package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write writes path with write. A regular file (or a path that does not
// exist yet) is written atomically: write is given a temporary file beside
// it, renamed over path only when all of it was written, mode 0644, so a
// reader never sees half a file and a failed write leaves the old one.
// Any other path is a path, not a file to replace: a symlink is written
// through to what it points to (atomically when that is a regular file),
// and a character device, a FIFO or a socket (/dev/null, /dev/stdout, a
// named pipe) is opened and written in place. The error names path.
func Write(path string, write func(*os.File) error) error {
	fi, err := os.Lstat(path)
	switch {
	case err != nil || fi.Mode().IsRegular():
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			// A link to nothing yet: create what it names.
			return writeInPlace(path, write, os.O_CREATE)
		}
		if tfi, err := os.Stat(target); err == nil && tfi.Mode().IsRegular() {
			return Write(target, write)
		}
		return writeInPlace(path, write, 0)
	case fi.IsDir():
		return fmt.Errorf("writing %s: it is a directory", path)
	default:
		return writeInPlace(path, write, 0)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrapPath(err))
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := write(f); err != nil {
		return fail(err)
	}
	// On disk before the rename: a crash leaves the old file or the new,
	// never an empty one.
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// unwrapPath is a path error's cause, as the path is named already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// writeInPlace opens path (a device, a FIFO, what a link names) and has
// write write into it, without a temporary file or a rename.
func writeInPlace(path string, write func(*os.File) error, flags int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|flags, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrapPath(err))
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
