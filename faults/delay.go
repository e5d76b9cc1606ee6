package faults

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Delay waits before sending, which reorders attempts (a retry may overtake
// its original).
type Delay struct {
	Wait time.Duration
}

// Kind returns KindDelay.
func (Delay) Kind() string { return KindDelay }

// Inject waits d.Wait, then sends req through next. If the request's context
// ends first, it returns the context's error without sending (Sent reports
// false for it). It bit (Answers.Bit) when the whole wait elapsed.
func (d Delay) Inject(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	t := time.NewTimer(d.Wait)
	defer t.Stop()
	ctx := req.Context()
	select {
	case <-t.C:
		bite(ctx)
		release(ctx, time.Now())
		return next.RoundTrip(req)
	case <-ctx.Done():
		closeBody(req)
		return nil, &unsentError{fmt.Errorf("injected delay: canceled before sending, during a %v delay: %w", d.Wait, context.Cause(ctx))}
	}
}
