package h1

import (
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
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&c.peekBuf[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	c.peekOK = errno == syscall.EAGAIN
	return true
}
