package faults

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Relative is a timeout's deadline given relative to the target's
// latency, which a calibration measures before the load: a percentile
// ("p50", "p90") or a factor of the p50 ("0.5x"). A deadline that follows
// the target's latency bites on a slow API and a fast one alike, where a
// fixed one (1s) never fires on an API that answers in 30 ms. The zero
// Relative is none.
type Relative struct {
	// Percentile is the latency percentile it is relative to: 50 or 90.
	Percentile int
	// Factor multiplies that percentile: 1 for "p50", 0.5 for "0.5x".
	Factor float64
}

// MinRelative is the shortest deadline a Relative resolves to: below it a
// client timer fires before the request is written, which says nothing of
// the server.
const MinRelative = 100 * time.Microsecond

// maxFactor bounds a Relative's factor: a deadline a hundred times the
// p50 is a fixed one in disguise.
const maxFactor = 100

// ParseRelative reads a relative deadline as a scenario and the --fault
// flag write it: "p50", "p90", or a factor of the p50 followed by x,
// "0.5x". A duration ("50ms") is not one: ok is then false and err nil,
// so that a caller tries it as a duration.
func ParseRelative(s string) (r Relative, ok bool, err error) {
	s = strings.TrimSpace(s)
	switch s {
	case "p50":
		return Relative{Percentile: 50, Factor: 1}, true, nil
	case "p90":
		return Relative{Percentile: 90, Factor: 1}, true, nil
	}
	num, isFactor := strings.CutSuffix(s, "x")
	if !isFactor {
		if strings.HasPrefix(s, "p") {
			return Relative{}, true, fmt.Errorf("%q: a relative deadline is p50, p90 or a factor of the p50 like 0.5x", s)
		}
		return Relative{}, false, nil
	}
	f, perr := strconv.ParseFloat(num, 64)
	if perr != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || f > maxFactor {
		return Relative{}, true, fmt.Errorf("%q: a factor of the p50 is a number above 0 and at most %d followed by x, like 0.5x", s, maxFactor)
	}
	return Relative{Percentile: 50, Factor: f}, true, nil
}

// IsZero reports whether r is no relative deadline.
func (r Relative) IsZero() bool { return r == Relative{} }

// String writes r as ParseRelative reads it: "p50", "p90", "0.5x".
func (r Relative) String() string {
	switch {
	case r.IsZero():
		return ""
	case r.Factor == 1:
		return fmt.Sprintf("p%d", r.Percentile)
	case r.Percentile == 50:
		return strconv.FormatFloat(r.Factor, 'g', -1, 64) + "x"
	}
	return strconv.FormatFloat(r.Factor, 'g', -1, 64) + "x of p" + strconv.Itoa(r.Percentile)
}

// Explain says what r is in words: "0.5 × the p50".
func (r Relative) Explain() string {
	if r.Factor == 1 {
		return fmt.Sprintf("the p%d", r.Percentile)
	}
	return fmt.Sprintf("%s × the p%d", strconv.FormatFloat(r.Factor, 'g', -1, 64), r.Percentile)
}

// check says what makes r unusable, nil when it is usable or zero.
func (r Relative) check() error {
	if r.IsZero() {
		return nil
	}
	if (r.Percentile != 50 && r.Percentile != 90) || !(r.Factor > 0 && r.Factor <= maxFactor) {
		return fmt.Errorf("a relative deadline is p50, p90 or a factor of the p50 up to %dx, got percentile %d factor %g", maxFactor, r.Percentile, r.Factor)
	}
	return nil
}

// Latency is what a calibration measured of the target's latency: the
// percentiles a Relative refers to.
type Latency struct {
	P50, P90 time.Duration
}

// Of is the deadline r gives for the latency l: its factor times its
// percentile, rounded to the microsecond, at least MinRelative.
func (r Relative) Of(l Latency) time.Duration {
	p := l.P50
	if r.Percentile == 90 {
		p = l.P90
	}
	d := time.Duration(r.Factor * float64(p)).Round(time.Microsecond)
	return max(d, MinRelative)
}

// Resolve returns s with its relative deadline resolved for the latency
// l: After set to s.Relative.Of(l). Relative stays, so that the Spec still
// says how After was found. A Spec without a relative deadline is
// returned as it is.
func (s Spec) Resolve(l Latency) Spec {
	if s.Relative.IsZero() {
		return s
	}
	s.After = s.Relative.Of(l)
	return s
}

// Unresolved reports whether s has a relative deadline that Resolve has
// not resolved yet: New refuses it, as no fault can wait for a latency
// nobody measured.
func (s Spec) Unresolved() bool { return !s.Relative.IsZero() && s.After == 0 }

// Relatives reports whether any of specs has a relative deadline, which a
// calibration must measure before the load.
func Relatives(specs []Spec) bool {
	for _, s := range specs {
		if !s.Relative.IsZero() {
			return true
		}
	}
	return false
}
