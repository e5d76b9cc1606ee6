package checks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

// Oracle reads the real state of the target.
type Oracle interface {
	// Name is the oracle's name, as invariants refer to it.
	Name() string
	// Before takes the reading before the load (counter, account); it is a
	// no-op for effects.
	Before(ctx context.Context) error
	// Observe reads the state after the run for the keys of h.
	Observe(ctx context.Context, h *history.History) (*Observation, error)
}

// Observe runs o.Observe and folds a failure into the observation's Err,
// so that the checks reading it are Unknown with that reason. It never
// returns nil.
func Observe(ctx context.Context, o Oracle, h *history.History) *Observation {
	obs, err := o.Observe(ctx, h)
	switch {
	case err != nil:
		return &Observation{Oracle: o.Name(), Err: err.Error()}
	case obs == nil:
		return &Observation{Oracle: o.Name(), Err: "the oracle returned no observation"}
	}
	return obs
}

// RequestFunc builds an oracle's request; key is the op key for per-key
// reads and "" for the others. The request may carry credentials: oracles
// never put a header into an error.
type RequestFunc func(ctx context.Context, key string) (*http.Request, error)

// ReadError is an oracle read that failed: the request could not be made,
// the answer was not 2xx, or its body did not hold what the oracle looks
// for. It names the request's method and URL (passwords and secret query
// parameters removed), the status, and Err, which quotes the start of the
// body. It never holds a request header.
type ReadError struct {
	Oracle string
	Method string
	URL    string
	Status int // 0 when no answer was received
	Err    error
}

func (e *ReadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "oracle %s: %s %s", e.Oracle, e.Method, e.URL)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": status %d", e.Status)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *ReadError) Unwrap() error { return e.Err }

// maxBody bounds an oracle's answer.
const maxBody = 256 << 20

// answer is a 2xx answer to an oracle request.
type answer struct {
	oracle, method, url string
	status              int
	body                []byte
}

// fail wraps err as a ReadError about this answer.
func (a *answer) fail(err error) error {
	return &ReadError{Oracle: a.oracle, Method: a.method, URL: a.url, Status: a.status, Err: err}
}

// fetch makes the request build returns for key and reads a 2xx answer.
func fetch(ctx context.Context, c *http.Client, oracle string, build RequestFunc, key string) (*answer, error) {
	if build == nil {
		return nil, fmt.Errorf("oracle %s: no request configured", oracle)
	}
	req, err := build(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("oracle %s: building the request: %w", oracle, err)
	}
	a := &answer{oracle: oracle, method: req.Method, url: redactURL(req.URL)}
	if a.method == "" {
		a.method = http.MethodGet
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is already named, redacted
		}
		return nil, a.fail(err)
	}
	defer resp.Body.Close()
	a.status = resp.StatusCode
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, a.fail(fmt.Errorf("reading the answer: %w", err))
	}
	if len(body) > maxBody {
		return nil, a.fail(fmt.Errorf("answer larger than %d bytes", maxBody))
	}
	a.body = body
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, a.fail(fmt.Errorf("%w: %s", ErrStatus, snippet(body)))
	}
	return a, nil
}

// secretParams are query parameters whose values never appear in errors.
var secretParams = map[string]bool{
	"key": true, "api_key": true, "apikey": true, "token": true, "access_token": true,
	"secret": true, "client_secret": true, "password": true, "auth": true,
	"signature": true, "sig": true,
}

// redactURL is u without its password and the values of secret query
// parameters.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.RawQuery != "" {
		q := c.Query()
		changed := false
		for k := range q {
			if secretParams[strings.ToLower(k)] {
				q[k] = []string{"xxxxx"}
				changed = true
			}
		}
		if changed {
			c.RawQuery = q.Encode()
		}
	}
	return c.Redacted()
}
