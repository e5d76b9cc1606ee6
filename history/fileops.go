package history

import "os"

// FileOps calls fn with each op of the history file at path, in the
// file's order, reading one record at a time, and returns the file's
// header. Op records are checked as Decode checks them; attempts are
// counted, not decoded (MergeShardFiles checks them). fn's error stops
// the read and is returned as it is; the file's own errors wrap ErrFormat
// (ErrTruncated for a file cut short).
func FileOps(path string, fn func(Op) error) (Meta, error) {
	f, err := os.Open(path)
	if err != nil {
		return Meta{}, err
	}
	defer f.Close()
	d := newLineReader(f, sizeOf(f))
	for {
		kind, b, err := d.next()
		switch {
		case err != nil:
			return d.meta, err
		case kind == 0:
			return d.meta, nil
		case kind != recOp:
			continue
		}
		op, err := d.op(b)
		if err != nil {
			return d.meta, err
		}
		if err := fn(op); err != nil {
			return d.meta, err
		}
	}
}
