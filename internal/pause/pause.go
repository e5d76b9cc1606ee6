// Package pause waits for a while unless a context ends first: the one
// interruptible sleep of every wait that must honour Ctrl-C.
package pause

import (
	"context"
	"time"
)

// For waits d, or until ctx ends; it reports whether the whole wait
// elapsed (false at once when ctx has ended; true at once for d <= 0).
func For(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
