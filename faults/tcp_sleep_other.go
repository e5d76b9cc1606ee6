//go:build !(linux || freebsd || netbsd || openbsd)

package faults

import "time"

// sleep is time.Sleep where nanosleep(2) is not at hand.
func sleep(d time.Duration) { time.Sleep(d) }
