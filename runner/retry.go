package runner

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// retryOn is retry.on compiled when the run starts: which outcomes and
// which HTTP statuses are retried, looked up without parsing anything per
// attempt.
type retryOn struct {
	fail, info bool
	status     [10]uint64 // bit s set: status s (100-599) is retried
}

// newRetryOn compiles retry.on: "fail", "info", a status class like "5xx"
// or a status like "409". A 2xx is never retried, even when listed.
func newRetryOn(on []string) (retryOn, error) {
	var r retryOn
	for i, s := range on {
		switch {
		case s == "fail":
			r.fail = true
		case s == "info":
			r.info = true
		case len(s) == 3 && s[1:] == "xx" && s[0] >= '1' && s[0] <= '5':
			c := int(s[0]-'0') * 100
			for st := c; st < c+100; st++ {
				r.set(st)
			}
		default:
			n, err := strconv.Atoi(s)
			if err != nil || len(s) != 3 || n < 100 || n > 599 {
				return retryOn{}, fmt.Errorf("retry.on[%d]: cannot retry on %q: retry.on takes fail, info, a status like 409 or a class like 5xx", i, s)
			}
			r.set(n)
		}
	}
	for st := 200; st < 300; st++ {
		r.status[st/64] &^= 1 << (st % 64)
	}
	return r, nil
}

func (r *retryOn) set(status int) { r.status[status/64] |= 1 << (status % 64) }

// match reports whether an attempt that ended with outcome (and status, for
// history.OK) is retried.
func (r *retryOn) match(outcome history.Outcome, status int) bool {
	switch outcome {
	case history.Fail:
		return r.fail
	case history.Info:
		return r.info
	case history.OK:
		return status >= 0 && status < 64*len(r.status) && r.status[status/64]&(1<<(status%64)) != 0
	}
	return false
}

// newBackoff compiles the retry policy's backoff; seed draws the jitter.
func newBackoff(b scenarios.Backoff, seed uint64) backoff {
	mult := b.Multiplier
	if mult <= 0 {
		mult = 1
	}
	return backoff{
		initial:    time.Duration(b.Initial),
		max:        time.Duration(b.Max),
		multiplier: mult,
		jitter:     min(max(b.Jitter, 0), 1),
		seed:       seed,
	}
}

// backoff is the retry policy's wait: the n-th retry waits
// min(max, initial*multiplier^(n-1)) minus up to jitter of it, the jitter
// drawn from (seed, op, n).
type backoff struct {
	initial, max time.Duration
	multiplier   float64
	jitter       float64
	seed         uint64
}

func (b backoff) wait(op, n int) time.Duration {
	mult := b.multiplier
	if mult <= 0 {
		mult = 1
	}
	d := float64(b.initial) * math.Pow(mult, float64(n-1))
	if b.max > 0 && d > float64(b.max) {
		d = float64(b.max)
	}
	if b.jitter > 0 {
		u := faults.Unit(b.seed, uint64(op), uint64(n))
		d -= d * min(b.jitter, 1) * u
	}
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// maxRetryAfter caps a Retry-After when the backoff has no maximum.
const maxRetryAfter = time.Minute

// retryWait is the wait before retry n of op: the backoff's wait, or longer
// when the answer asked for more with Retry-After (retryAfter > 0), which
// is honoured up to the backoff's maximum (maxRetryAfter when it has none).
func (b backoff) retryWait(op, n int, retryAfter time.Duration) time.Duration {
	d := b.wait(op, n)
	if retryAfter <= 0 {
		return d
	}
	limit := b.max
	if limit <= 0 {
		limit = maxRetryAfter
	}
	return max(d, min(retryAfter, limit))
}

// retryAfter is the wait an answer's Retry-After header asks for: a number
// of seconds or an HTTP date. A date is taken relative to the answer's Date
// header when it has one (so the clocks of client and server need not
// agree), else to now. It is 0 without a header, for an unreadable one or a
// date in the past.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(math.MaxInt64/time.Second) {
			return math.MaxInt64
		}
		return time.Duration(secs) * time.Second
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	if date, err := http.ParseTime(h.Get("Date")); err == nil {
		now = date
	}
	return max(at.Sub(now), 0)
}
