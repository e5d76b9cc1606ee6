package history

import (
	"errors"
	"fmt"
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
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	t := &tempFile{File: f, path: f.Name()}
	if os.Remove(t.path) == nil {
		t.path = ""
	}
	return t, nil
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
// directory): write its records with Records, then Finish it.
func CreateSpill(dir string) (*SpillFile, error) {
	f, err := createTemp(dir, "idemcheck-history-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("%w: a file to spill it to: %w", ErrSpill, err)
	}
	return &SpillFile{f: f, recs: NewRecords(f)}, nil
}

// Records writes the spill's records.
func (s *SpillFile) Records() *Records { return s.recs }

// Finish writes what is buffered and returns the spill; on an error the
// file is removed.
func (s *SpillFile) Finish() (*Spill, error) {
	t, err := s.recs.Flush()
	var size int64
	if err == nil {
		size, err = s.f.Seek(0, 1)
	}
	if err != nil {
		s.f.remove()
		return nil, fmt.Errorf("%w: %w", ErrSpill, err)
	}
	return &Spill{Ops: t.Ops, Attempts: t.Attempts, f: s.f, size: size}, nil
}

// Abandon removes a spill that will not be finished.
func (s *SpillFile) Abandon() { s.f.remove() }
