//go:build !linux

package h1

// alive reports true: where no non-blocking peek is wired, only
// MaxIdleAge keeps stale connections out.
func (c *conn) alive() bool { return true }

func (c *conn) peek(uintptr) bool { return true }

// writeWait writes b.
func (c *conn) writeWait(b []byte) (int, error) { return c.nc.Write(b) }

func (c *conn) send(uintptr) bool { return true }
