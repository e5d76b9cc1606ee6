package h1

import (
	"context"
	"io"
	"time"
)

// How a body early closed is drained so that its connection can be
// reused: at most maxDrain bytes, for at most drainTimeout; past either
// the connection is closed.
const (
	maxDrain     = 256 << 10
	drainTimeout = 100 * time.Millisecond
)

const (
	modeLength  = iota // Content-Length bytes
	modeChunked        // chunked encoding
	modeEOF            // up to the end of the connection
)

// body is a response body read straight from its connection's buffer.
// At its end, or when closed, the connection goes back to the pool (or is
// closed) and the body never touches it again.
type body struct {
	c     *conn
	ctx   context.Context
	mode  int
	left  int64 // bytes left in the body (modeLength) or in the chunk (modeChunked)
	crlf  bool  // a chunk's data ended and its CRLF is still to read
	reuse bool  // the connection may be pooled at the end
	done  bool  // the connection was released
	shut  bool  // Close was called
	err   error // sticky: io.EOF at the end, or what broke the body
}

// Read implements io.Reader.
func (b *body) Read(p []byte) (int, error) {
	if b.shut {
		return 0, ErrBodyClosed
	}
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	switch b.mode {
	case modeLength:
		n, err = b.readLength(p)
	case modeChunked:
		n, err = b.readChunked(p)
	default:
		n, err = b.c.br.Read(p)
		if err == io.EOF {
			b.release(false)
		}
	}
	if err != nil && err != io.EOF {
		err = cause(b.ctx, err)
		b.release(false)
	}
	b.err = err
	return n, err
}

func (b *body) readLength(p []byte) (int, error) {
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.c.br.Read(p)
	b.left -= int64(n)
	if b.left == 0 {
		b.release(b.reuse)
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *body) readChunked(p []byte) (int, error) {
	c := b.c
	for b.left == 0 {
		if b.crlf {
			if err := b.readCRLF(); err != nil {
				return 0, err
			}
		}
		line, err := c.readLine()
		if err != nil {
			return 0, eof(err)
		}
		size, ok := parseChunkSize(line)
		if !ok {
			return 0, errBadChunk
		}
		if size == 0 {
			return 0, b.trailer()
		}
		b.left = size
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := c.br.Read(p)
	b.left -= int64(n)
	if err != nil {
		return n, eof(err)
	}
	if b.left == 0 {
		b.crlf = true
		// The common end, a last chunk with no trailer, already here:
		// return it with the data, saving the caller a Read.
		if c.br.Buffered() >= 7 {
			if end, _ := c.br.Peek(7); string(end) == "\r\n0\r\n\r\n" {
				c.br.Discard(7)
				b.release(b.reuse)
				return n, io.EOF
			}
		}
	}
	return n, nil
}

// readCRLF reads the line ending after a chunk's data.
func (b *body) readCRLF() error {
	line, err := b.c.readLine()
	if err != nil {
		return eof(err)
	}
	if len(line) != 0 {
		return errBadChunk
	}
	b.crlf = false
	return nil
}

// trailer reads (and drops) the trailer after the last chunk and releases
// the connection; it returns io.EOF.
func (b *body) trailer() error {
	total := 0
	for {
		line, err := b.c.readLine()
		if err != nil {
			return eof(err)
		}
		if len(line) == 0 {
			b.release(b.reuse)
			return io.EOF
		}
		if total += len(line); total > b.c.p.t.maxHeader {
			return errBadChunk
		}
	}
}

// Close implements io.Closer. A body closed before its end is drained, a
// little, so that its connection can be reused; else the connection is
// closed.
func (b *body) Close() error {
	if b.shut {
		return nil
	}
	b.shut = true
	if b.done {
		return nil
	}
	if b.err != nil || !b.reuse || b.mode == modeEOF || (b.mode == modeLength && b.left > maxDrain) {
		b.release(false)
		return nil
	}
	c := b.c
	if !c.unwatch() {
		b.release(false) // the request's context ended
		return nil
	}
	if b.mode == modeLength && b.left <= int64(c.br.Buffered()) {
		c.br.Discard(int(b.left))
		b.left = 0
		b.release(true)
		return nil
	}
	// The deadline is ours now: the context watch is stopped.
	c.deadlined = c.nc.SetReadDeadline(time.Now().Add(drainTimeout)) == nil
	if !c.deadlined {
		b.release(false)
		return nil
	}
	var buf [4 << 10]byte
	b.shut = false
	for read := 0; read <= maxDrain; {
		n, err := b.Read(buf[:])
		read += n
		if err != nil {
			break // Read released the connection
		}
	}
	b.shut = true
	b.release(false) // a no-op when the body ended
	return nil
}

// release hands the connection back (reuse) or closes it, once.
func (b *body) release(reuse bool) {
	if b.done {
		return
	}
	b.done = true
	b.c.finish(reuse)
}

// eof turns the end of the connection inside a body into
// io.ErrUnexpectedEOF.
func eof(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseChunkSize parses a chunk-size line, extensions ignored.
func parseChunkSize(line []byte) (int64, bool) {
	var n int64
	digits := 0
	for i, d := range line {
		var v byte
		switch {
		case d >= '0' && d <= '9':
			v = d - '0'
		case d >= 'a' && d <= 'f':
			v = d - 'a' + 10
		case d >= 'A' && d <= 'F':
			v = d - 'A' + 10
		case d == ';' || d == ' ' || d == '\t':
			for _, r := range line[i:] {
				if r == ';' {
					return n, digits > 0
				}
				if r != ' ' && r != '\t' {
					return 0, false
				}
			}
			return n, digits > 0
		default:
			return 0, false
		}
		if digits++; digits > 15 {
			return 0, false
		}
		n = n<<4 | int64(v)
	}
	return n, digits > 0
}
