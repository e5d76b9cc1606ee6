package h1

import (
	"net"
	"os"
	"syscall"
	"unsafe"
)

// alive reports whether the idle connection is still open: a
// non-blocking peek finds neither the end of the stream (the server closed
// it) nor unexpected bytes.
func (c *conn) alive() bool {
	if c.raw == nil {
		return true
	}
	c.peekOK = false
	if err := c.raw.Read(c.peekFn); err != nil {
		return false
	}
	return c.peekOK
}

// peek is alive's syscall.RawConn.Read callback: one recv with MSG_PEEK
// and MSG_DONTWAIT, which reads nothing and never blocks.
func (c *conn) peek(fd uintptr) bool {
	c.peekOK = c.empty(fd)
	return true
}

// writeWait writes b, a whole request, and waits until the connection
// has something to read (the answer, an end, an error) or its deadline
// passes, in one syscall.RawConn.Read, whose start resets the read
// readiness. Right after that reset, and before the write, a
// non-blocking peek finds the socket empty, so the answer's arrival is
// an edge the wait sees, and the read that follows finds the answer
// there: a plain Write then Read would first read nothing (EAGAIN). The
// peek also checks a reused connection: when it finds bytes or an end
// already there (the server closed it, or sent more than its last
// answer), nothing is written and writeWait returns errStale. On a new
// connection, bytes there first (a server that speaks first) are left to
// the read, without a wait. A write the socket cannot take whole is
// finished by an ordinary Write; an error of the wait is left to the read
// that follows.
func (c *conn) writeWait(b []byte) (int, error) {
	if c.raw == nil {
		return c.nc.Write(b)
	}
	c.out, c.outN, c.outErr, c.outDone = b, 0, nil, false
	c.raw.Read(c.sendFn) // its error, if any, is the next read's
	n, rest, err := c.outN, c.out[c.outN:], c.outErr
	c.out, c.outErr = nil, nil
	if err != nil {
		return n, err
	}
	if len(rest) > 0 {
		// Not all written: the socket's buffer was full, or the wait
		// failed before the callback ran (a deadline past, a closed
		// connection), which a plain Write reports.
		m, err := c.nc.Write(rest)
		return n + m, err
	}
	return n, nil
}

// send is writeWait's syscall.RawConn.Read callback: the first call peeks,
// writes c.out and asks to wait for readability; the next returns at once.
func (c *conn) send(fd uintptr) bool {
	if c.outDone {
		return true
	}
	c.outDone = true
	wait := true
	if !c.empty(fd) {
		if c.reused {
			c.outErr = errStale
			return true
		}
		wait = false
	}
	for c.outN < len(c.out) {
		n, err := syscall.Write(int(fd), c.out[c.outN:])
		if n > 0 {
			c.outN += n
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return true // the socket's buffer is full: an ordinary Write finishes
		case err != nil:
			c.outErr = &net.OpError{Op: "write", Net: "tcp", Source: c.nc.LocalAddr(), Addr: c.nc.RemoteAddr(), Err: os.NewSyscallError("write", err)}
			return true
		}
	}
	return !wait
}

// empty reports whether a non-blocking peek finds nothing to read on fd:
// no byte, no end of stream, no error.
func (c *conn) empty(fd uintptr) bool {
	for {
		_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&c.peekBuf[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		if errno != syscall.EINTR {
			return errno == syscall.EAGAIN
		}
	}
}
