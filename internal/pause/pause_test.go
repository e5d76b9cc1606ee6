package pause

import (
	"context"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	if !For(context.Background(), time.Millisecond) || !For(context.Background(), 0) {
		t.Error("For(background) = false, want the wait to elapse")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if For(ctx, time.Hour) || time.Since(start) > time.Second {
		t.Error("For(ended context, 1h) waited or reported true")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if For(ctx, time.Hour) {
		t.Error("For(context ending in 10ms, 1h) = true")
	}
}
