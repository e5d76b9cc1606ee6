package testfs

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// SmallDisk returns an empty directory on a file system of size bytes,
// so that writing past them fails as a full disk does (ENOSPC). It is
// unmounted when the test ends.
func SmallDisk(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a small tmpfs (root is needed): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// ReadOnlyDir returns an empty directory that no one can write in, root
// included: mode 0555, and for root a read-only bind mount of it (as a
// container's read-only root file system is). It is unmounted when the
// test ends.
func ReadOnlyDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if os.Geteuid() != 0 {
		return dir // the mode is enough
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount a directory read-only: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount a directory read-only: %v", err)
	}
	return dir
}
