package audit

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
)

// definition is one check: what it is, what it sends, and its run.
type definition struct {
	id, name string
	// severity is the worst the check can find.
	severity Severity
	// probes says what is sent, for the plan and the docs.
	probes string
	// requests is the most requests the check sends.
	requests func(a *Auditor) int
	// needs returns why the check cannot run with this configuration, or "".
	needs func(a *Auditor) string
	run   func(ctx context.Context, a *Auditor, c *checkRun)
}

// finding is one violation a check saw.
type finding struct {
	sev Severity
	msg string
}

// checkRun collects what one check saw.
type checkRun struct {
	a        *Auditor
	skip     string
	findings []finding
	unknowns []string
	pass     string
	notes    []string
	shown    []*exchange
	counts   map[string]int
	counted  bool // the oracle was read
	suspects []suspicion
}

// suspicion is an answer that names another resource than its key's
// first answer: two executions, unless the oracle counts one effect.
type suspicion struct {
	key, msg  string
	otherwise Severity // when the oracle counts fewer than two effects
	resolved  bool
}

// twice records that key's answers name two resources. Without an oracle
// that is a critical failure judged from the answers; with one, the count
// of key's effects decides: two or more confirm it (critical), fewer make
// it a wrong replay (otherwise). Checks count the keys they suspect.
func (c *checkRun) twice(key string, otherwise Severity, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.a.oracle == nil {
		c.fail(Critical, "%s: executed twice (judged from the answers alone)", msg)
		return
	}
	c.suspects = append(c.suspects, suspicion{key: key, msg: msg, otherwise: otherwise})
}

// ambiguous records answers that may be a second execution or a replay
// with another body: with an oracle the count of key's effects decides
// (as for twice); without one the check is unknown on it.
func (c *checkRun) ambiguous(key string, otherwise Severity, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.a.oracle == nil {
		c.unknown("%s: without --effects the answers cannot tell a replay from a second execution", msg)
		return
	}
	c.suspects = append(c.suspects, suspicion{key: key, msg: msg, otherwise: otherwise})
}

// maxEvidence bounds the exchanges a check shows.
const maxEvidence = 24

func (c *checkRun) fail(sev Severity, format string, args ...any) {
	c.findings = append(c.findings, finding{sev, fmt.Sprintf(format, args...)})
}

func (c *checkRun) unknown(format string, args ...any) {
	c.unknowns = append(c.unknowns, fmt.Sprintf(format, args...))
}

func (c *checkRun) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// show adds exchanges to the evidence (nil ones left out).
func (c *checkRun) show(exs ...*exchange) {
	for _, e := range exs {
		if e != nil && len(c.shown) < maxEvidence {
			c.shown = append(c.shown, e)
		}
	}
}

// bad records what is wrong with an exchange that did not get a proper
// answer, and reports whether there was anything: a 5xx or a hang (high),
// no answer or the request cap (unknown).
func (c *checkRun) bad(e *exchange, what string) bool {
	switch {
	case e.is5xx():
		c.fail(High, "%s was answered %d", what, e.status)
	case e.hung():
		c.fail(High, "%s got no answer within %v (a hang)", what, c.a.reqTimeout)
	case e.err != nil:
		c.unknown("%s got no answer: %s", what, shortErr(e.err))
	default:
		return false
	}
	c.show(e)
	return true
}

// first checks the first request of an op: a 2xx is what every later
// probe builds on. It records why otherwise and reports false.
func (c *checkRun) first(e *exchange, what string) bool {
	c.show(e)
	if c.bad(e, what) {
		return false
	}
	if !e.ok() {
		c.unknown("%s was answered %d, not 2xx: nothing to compare with", what, e.status)
		return false
	}
	return true
}

// count reads the effects of keys; without an oracle, or when it cannot
// be read (recorded as unknown), it returns nil.
func (c *checkRun) count(ctx context.Context, keys ...string) map[string]int {
	if c.a.oracle == nil {
		return nil
	}
	n, err := c.a.effects(ctx, keys...)
	if err != nil {
		c.unknown("the effects could not be read: %s", c.a.secrets.Scrub(err.Error()))
		return nil
	}
	c.counted = true
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	for _, k := range keys {
		c.counts[k] = n[k]
	}
	for i := range c.suspects {
		s := &c.suspects[i]
		if s.resolved || !slices.Contains(keys, s.key) {
			continue
		}
		s.resolved = true
		if e := n[s.key]; e >= 2 {
			c.fail(Critical, "%s: executed twice (%d effects)", s.msg, e)
		} else {
			c.fail(s.otherwise, "%s, but the oracle counts %d effect: a replay that names another resource", s.msg, e)
		}
	}
	return n
}

// once reads the effects of keys acknowledged with a 2xx and fails a key
// with two or more (critical) or none (high, a success without effect).
// It reports whether they were read.
func (c *checkRun) once(ctx context.Context, keys ...string) bool {
	n := c.count(ctx, keys...)
	if n == nil {
		return false
	}
	for _, k := range keys {
		switch e := n[k]; {
		case e >= 2:
			c.fail(Critical, "key %s has %d effects", k, e)
		case e == 0:
			c.fail(High, "key %s was answered 2xx but has no effect (a success that did nothing, or --effects counts something else)", k)
		}
	}
	return true
}

// result turns what the check saw into its Check.
func (c *checkRun) result(d definition) Check {
	out := Check{ID: d.id, Name: d.name, Severity: d.severity, Evidence: c.evidence()}
	for _, s := range c.suspects {
		if !s.resolved && c.skip == "" {
			c.unknown("%s: the effects were not read", s.msg)
		}
	}
	switch {
	case c.skip != "":
		out.Result, out.Summary = Skipped, c.skip
		return out
	case len(c.findings) > 0:
		out.Result = Fail
		worst := c.findings[0].sev
		var msgs []string
		for _, f := range c.findings {
			if f.sev.rank() > worst.rank() {
				worst = f.sev
			}
		}
		for _, f := range c.findings {
			if f.sev == worst && !slices.Contains(msgs, f.msg) && len(msgs) < 3 {
				msgs = append(msgs, f.msg)
			}
		}
		out.Severity = worst
		out.Summary = strings.Join(msgs, "; ")
		if n := len(c.findings) - len(msgs); n > 0 {
			out.Summary += fmt.Sprintf(" (and %d more)", n)
		}
	case len(c.unknowns) > 0:
		out.Result = Unknown
		out.Summary = strings.Join(uniq(c.unknowns), "; ")
	default:
		out.Result = Pass
		out.Summary = c.pass
	}
	if len(c.notes) > 0 {
		out.Summary = strings.TrimSuffix(out.Summary+"; "+strings.Join(uniq(c.notes), "; "), "; ")
		out.Summary = strings.TrimPrefix(out.Summary, "; ")
	}
	out.JudgedBy = ByAnswers
	if c.counted {
		out.JudgedBy = ByEffects
	}
	return out
}

func uniq(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// evidence renders the exchanges shown, secrets scrubbed.
func (c *checkRun) evidence() []Evidence {
	out := []Evidence{}
	for _, e := range c.shown {
		out = append(out, c.a.evidenceOf(e, c.counts))
		if e.hidden != nil {
			h := c.a.evidenceOf(e.hidden, nil)
			h.Probe += ": the answer the client never saw"
			h.Hidden = true
			out = append(out, h)
		}
	}
	return out
}

// snippet is the start of a body, secrets scrubbed.
func (a *Auditor) snippet(b []byte) string {
	s := a.secrets.Scrub(strings.ToValidUTF8(string(b), "�"))
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

func (a *Auditor) evidenceOf(e *exchange, counts map[string]int) Evidence {
	ev := Evidence{Probe: e.req.label, Request: e.method + " " + e.url, Body: a.snippet(e.body), Status: e.status, Answer: a.snippet(e.answer)}
	if e.keySent {
		ev.Key = e.key
		if e.key == "" {
			ev.Key = `""`
		}
	}
	if len(e.headers) > 0 {
		ev.Headers = map[string]string{}
		for k, v := range e.headers {
			ev.Headers[k] = a.secrets.Scrub(v)
		}
	}
	if e.req.fault != nil {
		ev.Fault = e.req.fault.Kind()
	}
	if e.err != nil {
		ev.Error = a.secrets.Scrub(shortErr(e.err))
	}
	for _, h := range []string{"Content-Type", "Location", "Idempotent-Replayed", "Retry-After"} {
		if v := e.header.Get(h); v != "" {
			if ev.AnswerHeaders == nil {
				ev.AnswerHeaders = map[string]string{}
			}
			ev.AnswerHeaders[h] = a.secrets.Scrub(v)
		}
	}
	if n, ok := counts[e.key]; ok && e.keySent {
		ev.Effects = &n
	}
	return ev
}

// skipReason says why d does not run, or "".
func (a *Auditor) skipReason(d definition) string {
	if a.selected != nil && !a.selected[d.id] {
		return "not selected (--checks)"
	}
	if d.needs != nil {
		return d.needs(a)
	}
	return ""
}

// Run calibrates, then runs every check in order and returns the
// scorecard. It fails (wrapping ErrTarget or ErrConfig) only when the
// plain request cannot be made to succeed or the oracle cannot count it:
// then nothing can be judged. When ctx ends, the checks left are skipped
// and the scorecard is returned with ctx's error.
func (a *Auditor) Run(ctx context.Context) (*Scorecard, error) {
	sc := &Scorecard{FormatVersion: FormatVersion, Target: a.target(), Method: a.tmpl.Method(), Profile: a.profile.Name,
		Oracle: cmpOr(a.oracleID, "none"), Checks: []Check{}}
	if err := a.calibrate(ctx); err != nil {
		return nil, err
	}
	for _, d := range definitions() {
		c := &checkRun{a: a}
		switch need := d.requests(a); {
		case ctx.Err() != nil:
			c.skip = "interrupted"
		case a.skipReason(d) != "":
			c.skip = a.skipReason(d)
		case int(a.sent.Load())+need > a.maxRequests:
			c.skip = fmt.Sprintf("needs up to %d requests; %d left under --max-requests %d", need, a.maxRequests-int(a.sent.Load()), a.maxRequests)
		default:
			d.run(ctx, a, c)
		}
		sc.Checks = append(sc.Checks, c.result(d))
	}
	sc.Requests = int(a.sent.Load())
	sc.decide(a.cfg.FailOn)
	return sc, ctx.Err()
}

// Method is the audited request's method.
func (a *Auditor) Method() string { return a.tmpl.Method() }

// Target is the audited URL (the first target's), redacted.
func (a *Auditor) Target() string { return a.target() }

// target is the audited URL, redacted.
func (a *Auditor) target() string {
	raw, err := scenarios.Join(a.targets[0], a.sc.Operation.Path)
	if err != nil {
		return redactedURL(a.targets[0])
	}
	u, err := url.Parse(raw)
	if err != nil {
		return redactedURL(a.targets[0])
	}
	return redactedURL(u)
}

// calibrate sends the plain request twice with fresh keys: both must be
// answered 2xx, and the oracle, if any, must count one effect for each.
// It keeps the faster time as the request's latency.
func (a *Auditor) calibrate(ctx context.Context) error {
	var keys []string
	for i := range CalibrationRequests {
		o, err := a.newOp(ctx)
		if err != nil {
			return err
		}
		e := a.send(ctx, req{label: fmt.Sprintf("calibration %d", i+1), op: o})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.err != nil {
			return fmt.Errorf("%w: %s %s: %s", ErrTarget, e.method, e.url, a.secrets.Scrub(shortErr(e.err)))
		}
		if !e.ok() {
			return fmt.Errorf("%w: %s %s was answered %d, not 2xx: %s", ErrTarget, e.method, e.url, e.status, a.snippet(e.answer))
		}
		if a.latency == 0 || e.took < a.latency {
			a.latency = e.took
		}
		keys = append(keys, o.key)
	}
	if a.oracle == nil {
		return nil
	}
	n, err := a.effects(ctx, keys...)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return fmt.Errorf("%w: the effects oracle cannot be read: %s", ErrConfig, a.secrets.Scrub(err.Error()))
	}
	for _, k := range keys {
		if n[k] != 1 {
			return fmt.Errorf("%w: the effects oracle counts %d effects for key %s, which the API just answered 2xx once: it must count 1 (check --effects and --effects-path)", ErrConfig, n[k], k)
		}
	}
	return nil
}

// cut is the client deadline that cuts a request short: half the
// calibrated latency.
func (a *Auditor) cut() time.Duration { return max(a.latency/2, time.Millisecond) }
