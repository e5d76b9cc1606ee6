package runner

import (
	"context"
	"io"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/canon"
)

// DefaultMaxBody is how much of a response body is kept when
// Options.MaxBody is 0; the faults keep as much.
const DefaultMaxBody = faults.DefaultMaxBody

// discardSize is the size of the buffer the part of a body past the cap is
// read into and dropped.
const discardSize = 32 << 10

// maxIdleReads is how many reads in a row may return nothing before a body
// is given up with io.ErrNoProgress: a reader that returns (0, nil) forever
// must not hold a worker.
const maxIdleReads = 100

// bodyReader reads every response body of one goroutine to its end. It
// keeps the first max bytes in buf, reused from one body to the next and
// grown as needed, and reads the rest into a small fixed buffer, counting
// and hashing it, so a body of any size costs at most max bytes of memory
// and the attempt still knows its real size and fingerprint.
type bodyReader struct {
	max     int
	buf     []byte // the kept prefix of the last body
	discard []byte // allocated with the first body longer than max
}

// newBodyReader returns a reader keeping up to limit (> 0) bytes of each
// body.
func newBodyReader(limit int) bodyReader {
	return bodyReader{max: limit, buf: make([]byte, 0, min(4<<10, limit))}
}

// body is what bodyReader.read got of a response body.
type body struct {
	// kept is the first (up to) max bytes; it is valid until the next read.
	kept []byte
	// size is the number of bytes read, kept or not.
	size int64
	// raw is the FNV-1a hash of every byte read (canon.FNV1a of the whole
	// body), set only when the body was longer than max.
	raw uint64
}

// truncated reports whether bytes were read past the kept prefix.
func (b body) truncated() bool { return b.size > int64(len(b.kept)) }

// read reads rc to its end and closes it. It stops early with an error
// when rc fails, when ctx is done (checked between reads, so a body that
// never ends is cut off by the request's deadline or cancellation) or when
// rc makes no progress for maxIdleReads reads. What was read until then is
// returned even with an error.
func (br *bodyReader) read(ctx context.Context, rc io.ReadCloser) (body, error) {
	defer rc.Close()
	buf := br.buf[:0]
	var (
		size int64
		hash canon.Hash // of the bytes past the prefix, once there are some
		idle int
	)
	done := func(err error) (body, error) {
		br.buf = buf
		b := body{kept: buf, size: size}
		if b.truncated() {
			b.raw = hash.Sum()
		}
		return b, err
	}
	for {
		var dst []byte
		keeping := len(buf) < br.max
		if keeping {
			if len(buf) == cap(buf) {
				// Grow by doubling, never past max.
				grown := make([]byte, len(buf), min(max(2*cap(buf), 512), br.max))
				copy(grown, buf)
				buf = grown
			}
			dst = buf[len(buf):min(cap(buf), br.max)]
		} else {
			if br.discard == nil {
				br.discard = make([]byte, discardSize)
			}
			if size == int64(len(buf)) {
				hash = canon.NewHash().Add(buf)
			}
			dst = br.discard
		}
		n, err := rc.Read(dst)
		size += int64(n)
		if keeping {
			buf = buf[:len(buf)+n]
		} else {
			hash = hash.Add(dst[:n])
		}
		switch {
		case err == io.EOF:
			return done(nil)
		case err != nil:
			return done(err)
		case n == 0:
			if idle++; idle >= maxIdleReads {
				return done(io.ErrNoProgress)
			}
		default:
			idle = 0
		}
		if err := ctx.Err(); err != nil {
			return done(err)
		}
	}
}
