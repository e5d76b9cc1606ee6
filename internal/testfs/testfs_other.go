//go:build !linux

package testfs

import "testing"

// SmallDisk skips the test: only Linux mounts one here.
func SmallDisk(t testing.TB, size int) string {
	t.Helper()
	t.Skip("a small disk is mounted on Linux only")
	return ""
}

// ReadOnlyDir skips the test: only Linux mounts one here.
func ReadOnlyDir(t testing.TB) string {
	t.Helper()
	t.Skip("a read-only directory is mounted on Linux only")
	return ""
}
