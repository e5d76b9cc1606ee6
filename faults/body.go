package faults

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"io"
	"net/http"
)

// DefaultMaxBody is how many bytes of a response body a fault keeps when
// Transport.MaxBody is 0: the runner's default cap too.
const DefaultMaxBody = 1 << 20

// dropAckReadFactor bounds what drop_ack reads of the answer it hides:
// at most dropAckReadFactor × MaxBody bytes (64 MiB with the default cap),
// besides the request's context.
const dropAckReadFactor = 64

// discardSize is the buffer the part of a body past the cap is read into.
const discardSize = 32 << 10

// maxIdleReads is how many reads in a row may return nothing before a body
// is given up with io.ErrNoProgress.
const maxIdleReads = 100

// ErrReadLimit is wrapped by the error of a body a fault stopped reading
// because it was longer than the fault reads (drop_ack's limit).
var ErrReadLimit = errors.New("answer body longer than the fault reads")

// Body is a response body a fault read ahead of its caller (the timeout and
// duplicate faults, and the answer drop_ack hides). It keeps at most the
// Transport's MaxBody first bytes; the rest was read, counted and hashed,
// then dropped, so a fault's memory stays bounded whatever the target
// sends. Reading a Body yields the kept bytes only: a caller that needs the
// real length and a hash of the whole body asks Size and Hash.
type Body struct {
	r    bytes.Reader
	kept []byte
	size int64
	hash uint64
}

// Read reads the kept bytes.
func (b *Body) Read(p []byte) (int, error) { return b.r.Read(p) }

// Close does nothing: the connection's body was closed when it was read.
func (b *Body) Close() error { return nil }

// Kept returns the kept prefix of the body; it must not be modified.
func (b *Body) Kept() []byte { return b.kept }

// Size is the number of bytes the fault read, kept or not.
func (b *Body) Size() int64 { return b.size }

// Truncated reports whether the body was longer than what was kept.
func (b *Body) Truncated() bool { return b.size > int64(len(b.kept)) }

// Hash is the 64-bit FNV-1a hash (hash/fnv's New64a) of every byte read,
// set only when the body was truncated; 0 otherwise.
func (b *Body) Hash() uint64 { return b.hash }

// readBody reads rc to its end and closes it, keeping up to keep bytes
// (DefaultMaxBody when keep <= 0) and counting and hashing the rest. It
// stops early with an error when rc fails, when ctx is done (checked
// between reads), when rc makes no progress for maxIdleReads reads, or when
// limit > 0 bytes were read (ErrReadLimit). The Body is never nil: it holds
// what was read until then.
func readBody(ctx context.Context, rc io.ReadCloser, keep int, limit int64) (*Body, error) {
	defer rc.Close()
	if keep <= 0 {
		keep = DefaultMaxBody
	}
	b := &Body{}
	buf := make([]byte, 0, min(4<<10, keep))
	var (
		discard []byte
		hash    = fnv.New64a()
		idle    int
		err     error
	)
	for {
		var dst []byte
		keeping := len(buf) < keep
		if keeping {
			if len(buf) == cap(buf) {
				grown := make([]byte, len(buf), min(max(2*cap(buf), 512), keep))
				copy(grown, buf)
				buf = grown
			}
			dst = buf[len(buf):min(cap(buf), keep)]
		} else {
			if discard == nil {
				discard = make([]byte, discardSize)
				hash.Write(buf)
			}
			dst = discard
		}
		if limit > 0 && int64(len(dst)) > limit-b.size {
			dst = dst[:max(limit-b.size, 0)]
		}
		if len(dst) == 0 {
			err = ErrReadLimit
			break
		}
		n, rerr := rc.Read(dst)
		b.size += int64(n)
		if keeping {
			buf = buf[:len(buf)+n]
		} else {
			hash.Write(dst[:n])
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
		if n == 0 {
			if idle++; idle >= maxIdleReads {
				err = io.ErrNoProgress
				break
			}
		} else {
			idle = 0
		}
		if cerr := ctx.Err(); cerr != nil {
			err = context.Cause(ctx)
			break
		}
	}
	b.kept = buf
	b.r.Reset(buf)
	if b.Truncated() {
		b.hash = hash.Sum64()
	}
	return b, err
}

// bufferBody replaces resp's body with a *Body holding what readBody kept
// of it (see readBody), with ContentLength set to the kept length. When the
// body was truncated its Content-Length header is dropped, so a proxy
// forwarding the response frames the shorter body correctly.
func bufferBody(ctx context.Context, resp *http.Response, keep int) error {
	b, err := readBody(ctx, resp.Body, keep, 0)
	if err != nil {
		return err
	}
	setBody(resp, b)
	return nil
}

// setBody puts b in place of resp's body, which it was read from.
func setBody(resp *http.Response, b *Body) {
	resp.Body = b
	resp.ContentLength = int64(len(b.kept))
	if b.Truncated() {
		resp.Header.Del("Content-Length")
	}
}
