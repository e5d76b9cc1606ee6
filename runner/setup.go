package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/idemcheck/idemcheck/scenarios"
)

// Setup sends the scenario's setup requests in order, without faults,
// through opts.Transport (nil: a default transport, closed on return), to
// the first of opts.Targets (else opts.Target), each bounded by
// opts.RequestTimeout. Their
// templates see Seq 0, Attempt 0, no key and no user. A transport error or a
// non-2xx answer stops it with an error wrapping ErrTarget that names the
// request, the status and the start of the body; a template that does not
// compile or render is an error that does not.
func Setup(ctx context.Context, sc *scenarios.Scenario, opts Options) error {
	if len(sc.Setup) == 0 {
		return nil
	}
	rt := opts.Transport
	if rt == nil {
		tr := NewTransport(1)
		defer tr.CloseIdleConnections()
		rt = tr
	}
	limit, err := maxBody(opts)
	if err != nil {
		return err
	}
	targets, err := targets(opts)
	if err != nil {
		return err
	}
	timeout, err := requestTimeout(opts)
	if err != nil {
		return err
	}
	timeoutErr := &timeoutError{timeout}
	br := newBodyReader(limit)
	k := newKeeper(opts.Secrets, targets, sc.Setup, opts.RedactPath)
	env := k.env(opts.Env)
	for i, rq := range sc.Setup {
		field := fmt.Sprintf("setup[%d]", i)
		t, err := scenarios.NewTemplate(field, rq, http.MethodGet, env)
		if err != nil {
			return err
		}
		rctx, cancel := withTimeout(ctx, timeout, timeoutErr)
		req, err := t.Build(rctx, targets[0], scenarios.Vars{})
		if err != nil {
			cancel()
			return fmt.Errorf("%s: %w", field, err)
		}
		k.authorize(req, 0)
		_, err = fetch(rt, req, &br, k)
		cancel()
		var se *StatusError
		if errors.As(err, &se) {
			return &SetupError{Field: field, Err: se}
		}
		if err != nil {
			return fmt.Errorf("%w: %s %w", ErrTarget, field, err)
		}
	}
	return nil
}

// SetupError is a setup request the target answered, but not with a 2xx:
// it names the request and the answer, so that a wrong path or a refused
// reset is not mistaken for an unreachable target.
type SetupError struct {
	// Field is the request's place in the scenario, e.g. "setup[0]".
	Field string
	Err   *StatusError
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("%s: %s %s answered %d, want a 2xx: %s", e.Field, e.Err.Method, e.Err.Path, e.Err.Status, e.Err.Body)
}

func (e *SetupError) Unwrap() error { return e.Err }

// Hint says what to check.
func (e *SetupError) Hint() string {
	return "the target answered a setup request with an error: check its method and path in the scenario's setup, and that the API allows it"
}
