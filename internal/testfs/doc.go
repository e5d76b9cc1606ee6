// Package testfs gives tests file systems that misbehave as production
// ones do: a small disk that fills, a directory that cannot be written
// even by root. On Linux it mounts them (root is needed); elsewhere, and
// when mounting is refused, the test is skipped.
package testfs
