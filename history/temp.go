package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrSpill is wrapped by the errors of writing a history to disk (a
// spill, a merge): the disk's fault (full, gone), not the history's.
var ErrSpill = errors.New("cannot write the history to disk")

// tempFile is a temporary file that no path names once it is created,
// where the system allows (not on Windows): a run killed by a second
// Ctrl-C, or a crash, leaves nothing behind. path is "" once unlinked;
// remove closes it and deletes what is left.
type tempFile struct {
	*os.File
	path string
}

func createTemp(dir, pattern string) (*tempFile, error) {
	t, err := createNamed(dir, pattern)
	if err != nil {
		return nil, err
	}
	if os.Remove(t.path) == nil {
		t.path = ""
	}
	return t, nil
}

// createNamed is createTemp for a file that keeps its name until it is
// removed: a run's only record of what it sent, left for the user when
// the process ends before it could be saved.
func createNamed(dir, pattern string) (*tempFile, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &tempFile{File: f, path: f.Name()}, nil
}

func (t *tempFile) remove() error {
	if t == nil || t.File == nil {
		return nil
	}
	err := t.Close()
	t.File = nil
	if t.path != "" {
		err = os.Remove(t.path)
	}
	return err
}

// SpillFile is a Spill being written (CreateSpill).
type SpillFile struct {
	f    *tempFile
	recs *Records
}

// CreateSpill starts a spill in dir ("": the system's temporary
// directory): write its records with Records, then Finish it. The file
// is named idemcheck-spill-*.jsonl until it is removed (Spill.Remove,
// Abandon), so that what a run wrote of its history is not lost with the
// process (Keep).
func CreateSpill(dir string) (*SpillFile, error) {
	f, err := createNamed(dir, "idemcheck-spill-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("%w: a file to spill it to: %w", ErrSpill, err)
	}
	return &SpillFile{f: f, recs: NewRecords(f)}, nil
}

// createMerge starts a spill that no path names (createTemp): what a
// merge writes is derived from files that stay.
func createMerge(dir string) (*SpillFile, error) {
	f, err := createTemp(dir, "idemcheck-merge-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("%w: a file to merge it into: %w", ErrSpill, err)
	}
	return &SpillFile{f: f, recs: NewRecords(f)}, nil
}

// Records writes the spill's records.
func (s *SpillFile) Records() *Records { return s.recs }

// Finish writes what is buffered and returns the spill; on an error the
// file stays, for Keep or Abandon.
func (s *SpillFile) Finish() (*Spill, error) {
	t, err := s.recs.Flush()
	var size int64
	if err == nil {
		size, err = s.f.Seek(0, 1)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpill, err)
	}
	return &Spill{Ops: t.Ops, Attempts: t.Attempts, f: s.f, size: size}, nil
}

// Abandon removes a spill that will not be finished.
func (s *SpillFile) Abandon() { s.f.remove() }

// Keep ends a spill that could not be finished (its disk full, say) and
// leaves what it holds: the records written whole, cut after the last
// complete line. It returns the file's path and size; path is "" when
// the file has no name (nothing is kept then).
func (s *SpillFile) Keep() (path string, size int64) {
	t := s.f
	if t == nil || t.File == nil {
		return "", 0
	}
	s.recs.Flush() // what fits: a full disk may take part of it
	size, _ = t.Seek(0, io.SeekEnd)
	size = lastLineEnd(t.File, size)
	t.Truncate(size)
	t.Close()
	t.File = nil
	return t.path, size
}

// lastLineEnd is the offset just past the last newline in the first size
// bytes of f (0 when there is none).
func lastLineEnd(f *os.File, size int64) int64 {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && n < int(end-start) {
			return 0
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1
		}
		end = start
	}
	return 0
}
