package history

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FileOps hands out a file's ops, in order, with its header; a file cut
// short is refused, and the caller's error stops the read.
func TestFileOps(t *testing.T) {
	h := sample()
	path := writeShards(t, h)[0]
	var ops []Op
	meta, err := FileOps(path, func(op Op) error { ops = append(ops, op); return nil })
	if err != nil || meta.RunID != "r1" || !cmp.Equal(ops, h.Ops) {
		t.Errorf("FileOps = %+v, %+v, %v; want the ops %+v of run r1", meta, ops, err, h.Ops)
	}
	stop := errors.New("stop")
	n := 0
	if _, err := FileOps(path, func(Op) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("FileOps with fn failing: %v after %d ops, want fn's error after 1", err, n)
	}
	full := encoded(t, h)
	if err := os.WriteFile(path, []byte(full[:strings.LastIndex(strings.TrimSuffix(full, "\n"), "\n")+1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FileOps(path, func(Op) error { return nil }); !errors.Is(err, ErrTruncated) {
		t.Errorf("FileOps(no trailer) = %v, want ErrTruncated", err)
	}
}
