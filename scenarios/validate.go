package scenarios

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/yamlstrict"
)

// problem is a diagnostic and the other fields it depends on, so that a
// field which did not decode does not also report what follows from it.
type problem struct {
	Diagnostic
	related []string
}

type checker struct {
	s   *Scenario
	out []problem
}

func (c *checker) add(field, msg, hint string, related ...string) {
	c.out = append(c.out, problem{
		Diagnostic: Diagnostic{Source: c.s.Source, Line: c.s.line(field), Field: field, Message: msg, Hint: hint},
		related:    related,
	})
}

// line is the line of path in the source, or of its closest parent that
// has one; 0 when none does.
func (s *Scenario) line(path string) int {
	for path != "" {
		if l, ok := s.Lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// Validate checks a loaded scenario (defaults applied, as Load and Parse
// do) and returns every problem at once, each at its line; nil when the
// scenario is valid. It changes nothing.
func (s *Scenario) Validate() Diagnostics {
	ps := s.validate()
	if len(ps) == 0 {
		return nil
	}
	ds := make(Diagnostics, len(ps))
	for i, p := range ps {
		ds[i] = p.Diagnostic
	}
	sortDiagnostics(ds)
	return ds
}

func (s *Scenario) validate() []problem {
	c := &checker{s: s}
	if strings.TrimSpace(s.Name) == "" {
		c.add("name", "name is required", "name: my-charges")
	}
	switch s.Expect {
	case ExpectPass, ExpectViolation:
	default:
		c.add("expect", fmt.Sprintf("unknown expectation %q", s.Expect), "expect: pass (every invariant holds) or expect: violation (a known-broken target is caught)")
	}
	seenTarget := map[string]int{}
	parse := parseTarget
	if s.Operation.Publish != nil {
		parse = parseBroker
	}
	for i, t := range s.Target {
		at := s.targetField(i)
		if _, err := parse(t); err != nil {
			var he *hintError
			errors.As(err, &he)
			c.add(at, he.msg, he.hint)
		}
		if j, dup := seenTarget[t]; dup {
			c.add(at, fmt.Sprintf("target %d repeats target %d", i, j), "list each base URL once")
		}
		seenTarget[t] = i
	}
	c.profile()
	for i, u := range s.Users {
		if strings.TrimSpace(u) == "" {
			c.add(fmt.Sprintf("users[%d]", i), "empty user name", "users: [alice, bob]")
		}
	}
	c.load()
	c.retry()
	c.faults()
	c.key()
	c.webhook()
	c.publish()
	c.requests()
	c.replay()
	c.object()
	c.expectations()
	c.response()
	oracleKinds := c.oracles()
	c.invariants(oracleKinds)
	c.thresholds()
	if s.Quiet < 0 {
		c.add("quiet", "negative duration", "quiet: 200ms")
	}
	if s.SettleGrace < 0 {
		c.add("settle_grace", "negative duration", "settle_grace: 2s")
	}
	if s.Retention <= 0 {
		c.add("retention", fmt.Sprintf("retention must be above 0, got %s", s.Retention), "retention: 24h, how long the API keeps its idempotency keys")
	}
	return c.out
}

func (c *checker) load() {
	l := c.s.Load
	for _, f := range []struct {
		name string
		v    int
	}{{"ops", l.Ops}, {"concurrency", l.Concurrency}} {
		if f.v < 0 {
			c.add("load."+f.name, fmt.Sprintf("negative %s %d", f.name, f.v), "write a number above 0")
		}
	}
	if l.Duration < 0 {
		c.add("load.duration", "negative duration", "load.duration: 10s")
	}
	if l.Rate < 0 {
		c.add("load.rate", "negative rate", "load.rate: 200/s")
	}
	if l.Ops == 0 && l.Duration == 0 && len(l.Stages) == 0 {
		c.add("load", "the load never ends: set load.ops or load.duration", "ops: 500 (stop after 500 ops) or duration: 10s", "load.ops", "load.duration")
	}
	c.stages()
	switch {
	case len(l.Stages) > 0:
	case l.Concurrency == 0 && l.Rate == 0:
		c.add("load", "set load.concurrency (closed model) or load.rate (open model)",
			"concurrency: 16 runs 16 workers that each send as soon as they are answered; rate: 200/s starts 200 ops a second whatever the answers do",
			"load.concurrency", "load.rate")
	case l.Concurrency > 0 && l.Rate > 0:
		c.add("load.rate", "set load.concurrency or load.rate, not both",
			"concurrency is the closed model (workers), rate the open model (arrivals); keep one", "load.concurrency")
	}
	if l.RequestTimeout <= 0 {
		c.add("load.request_timeout", fmt.Sprintf("request_timeout must be above 0, got %s", l.RequestTimeout),
			fmt.Sprintf("request_timeout: 10s bounds every request; leave it out for %s", Duration(DefaultRequestTimeout)))
	}
	for i, f := range c.s.Faults {
		if l.RequestTimeout > 0 && f.Kind == faults.KindTimeout && f.After >= l.RequestTimeout.Std() {
			c.add(fmt.Sprintf("faults[%d].after", i), fmt.Sprintf("a timeout fault after %s never fires: load.request_timeout ends every request after %s", f.After, l.RequestTimeout),
				"make after shorter than request_timeout, or raise load.request_timeout", "load.request_timeout")
		}
	}
	if l.MaxInFlight < 1 {
		c.add("load.max_in_flight", fmt.Sprintf("max_in_flight must be at least 1, got %d", l.MaxInFlight), fmt.Sprintf("leave it out for %d", DefaultMaxInFlight))
	}
}

func (c *checker) profile() {
	if _, ok := LookupProfile(c.s.ProfileName); !ok {
		hint := yamlstrict.Suggest(c.s.ProfileName, ProfileNames(), "profile")
		if !strings.Contains(hint, "takes:") {
			hint = strings.TrimSpace(hint + " profile takes: " + strings.Join(ProfileNames(), ", "))
		}
		c.add("profile", fmt.Sprintf("unknown profile %q", c.s.ProfileName), hint)
	}
}

func (c *checker) retry() {
	r := c.s.Retry
	if r.Attempts < 1 {
		c.add("retry.attempts", fmt.Sprintf("attempts must be at least 1, got %d", r.Attempts), "attempts counts the first send: 1 means no retries, 5 means up to 4 retries")
	}
	b := r.Backoff
	if b.Initial < 0 || b.Max < 0 {
		c.add("retry.backoff", "negative backoff", "initial: 10ms, max: 1s")
	}
	if b.Initial > b.Max {
		c.add("retry.backoff.initial", fmt.Sprintf("initial backoff %s is above max %s", b.Initial, b.Max), "raise max or lower initial", "retry.backoff.max")
	}
	if b.Multiplier < 1 {
		c.add("retry.backoff.multiplier", fmt.Sprintf("multiplier must be at least 1, got %g", b.Multiplier), "multiplier: 2 doubles the wait after each retry")
	}
	if b.Jitter < 0 || b.Jitter > 1 {
		c.add("retry.backoff.jitter", fmt.Sprintf("jitter must be within 0..1, got %g", b.Jitter), "jitter: 0.5 takes up to half of each wait off at random")
	}
	for i, on := range r.On {
		if !validRetryOn(on) {
			c.add(fmt.Sprintf("retry.on[%d]", i), fmt.Sprintf("cannot retry on %q", on), "retry.on takes fail, info, a status like 409 or a class like 5xx")
		}
	}
}

func validRetryOn(on string) bool {
	switch on {
	case "fail", "info", "4xx", "5xx":
		return true
	}
	n, err := strconv.Atoi(on)
	return err == nil && len(on) == 3 && n >= 100 && n <= 599
}

func (c *checker) thresholds() {
	t := c.s.Thresholds
	order := []struct {
		name string
		d    Duration
	}{{"p50", t.P50}, {"p90", t.P90}, {"p99", t.P99}, {"p99.9", t.P999}, {"max", t.Max}}
	var prev string
	var prevD Duration
	for _, o := range order {
		if o.d < 0 {
			c.add("thresholds."+o.name, "negative threshold", "thresholds: {p99: 250ms}")
			continue
		}
		if o.d == 0 {
			continue
		}
		if prev != "" && o.d < prevD {
			c.add("thresholds."+o.name, fmt.Sprintf("%s %s is below %s %s", o.name, o.d, prev, prevD), "a higher percentile cannot be faster", "thresholds."+prev)
		}
		prev, prevD = o.name, o.d
	}
	if e := t.ErrorRate; e != nil && (*e < 0 || *e > 1) {
		c.add("thresholds.error_rate", fmt.Sprintf("error_rate must be within 0..1, got %g", *e), "error_rate: 0.01 allows 1% of ops to end without a 2xx")
	}
}
