//go:build linux || freebsd || netbsd || openbsd

package faults

import (
	"syscall"
	"time"
)

// sleep blocks the calling thread for d with nanosleep(2): within tens of
// µs, where time.Sleep of less than a millisecond can wake up to a
// millisecond late (the runtime's poller waits in whole milliseconds).
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
