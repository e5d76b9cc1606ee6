package audit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Result is what an audit did and its judgement.
type Result struct {
	// History is every op and attempt the audit sent, with its effects
	// readings and what it is judged against (Meta.Judge.Contract): the
	// scorecard is checks.JudgeContract of it, live or saved.
	History *history.History
	// Scorecard is the judgement.
	Scorecard *checks.Scorecard
}

// Run calibrates, then runs every check's probe in order, and judges the
// history they left (checks.JudgeContract). It fails (wrapping ErrTarget
// or ErrConfig) only when the plain request cannot be made to succeed or
// the oracle cannot count it: then nothing can be judged. When ctx ends,
// the checks left are skipped, the history says it was interrupted, and
// the result is returned with ctx's error.
func (a *Auditor) Run(ctx context.Context) (*Result, error) {
	defer a.client.Close()
	now := time.Now()
	a.h = &history.History{Meta: history.Meta{RunID: newRunID(a.rnd), Scenario: "audit", Description: a.sc.Description, Source: a.sc.Source,
		Target: redactedURL(a.targets[0]), Started: now, Judge: history.Judge{Expect: "pass", Profile: a.profile, FailOn: a.cfg.FailOn}}}
	if err := a.links(ctx); err != nil {
		return nil, err
	}
	ct := &history.Contract{Method: a.tmpl.Method(), URL: a.target(), Oracle: a.oracleID, Errors: a.cfg.Errors,
		Lease: a.lease, Retention: a.cfg.Retention, RetentionKeys: a.cfg.RetentionKeys, KeyFromAnswer: cmpOr(a.mintHeader, a.mintPath)}
	if len(a.targets) > 1 {
		for _, u := range a.targets {
			a.h.Meta.Targets = append(a.h.Meta.Targets, redactedURL(u))
		}
	}
	if err := a.calibrate(ctx); err != nil {
		return nil, err
	}
	ran := "" // the last check whose probe ran: the one an interrupt cut
	for _, d := range probes() {
		cc := history.ContractCheck{ID: d.id}
		switch need := d.requests(a); {
		case ctx.Err() != nil:
			cc.Skip = "interrupted"
			a.h.Meta.Interrupt(interruptedIn(ran))
		case a.skipReason(d) != "":
			cc.Skip = a.skipReason(d)
		case int(a.sent.Load())+need > a.maxRequests:
			cc.Skip = fmt.Sprintf("needs up to %d requests; %d left under --max-requests %d", need, a.maxRequests-int(a.sent.Load()), a.maxRequests)
		default:
			cc.Cut = d.run(ctx, a)
			ran = d.id
		}
		ct.Checks = append(ct.Checks, cc)
	}
	ct.Requests = int(a.sent.Load())
	a.h.Meta.Judge.Contract = ct
	a.h.Meta.Ended = time.Now()
	if ctx.Err() != nil {
		a.h.Meta.Interrupt(interruptedIn(ran))
	}
	a.h.Readings = a.readingsTaken()
	a.h.Sort()
	return &Result{History: a.h, Scorecard: checks.JudgeContract(a.h)}, ctx.Err()
}

// interruptedIn is the phase of an audit interrupted after the probe of
// check ran ("" when none had run): the history's Meta.InterruptedIn.
func interruptedIn(ran string) string {
	if ran == "" {
		return "before the checks"
	}
	return "check " + ran
}

// newRunID draws a run id: 16 hex digits.
func newRunID(rnd *rand.Rand) string { return fmt.Sprintf("%016x", rnd.Uint64()) }

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

// links sends the Config's links, once each, in order, and puts the
// values their answers give into the operation's path. It fails when a
// link's request fails, or its answer does not give the value.
func (a *Auditor) links(ctx context.Context) error {
	if len(a.cfg.Links) == 0 {
		return nil
	}
	values := map[string]string{}
	for _, l := range a.cfg.Links {
		hr, key, body, err := l.Build(ctx, a.getenv)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrConfig, l.What, err)
		}
		id := a.record(history.CheckLinks, key)
		var v string
		verr := errors.New("its answer was not read")
		at := a.sendBuilt(ctx, &built{r: req{label: checks.Label(0, checks.RoleLink, "{"+l.Param+"}"), op: op{id: id, key: key}}, n: a.reserve(id), http: hr,
			// the evidence before the send: it registers the secrets of
			// the request's headers, which its answer is scrubbed of
			sent: a.evidence(hr, l.KeyHeader, key, body),
			read: func(status int, h http.Header, b []byte, whole bool) { v, verr = l.Value(status, h, b, whole) }})
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case at.Outcome != history.OK:
			return fmt.Errorf("%s, which failed: %s", l.What, at.Err)
		case verr != nil:
			return fmt.Errorf("%s: %w", l.What, verr)
		}
		values[l.Param] = v
	}
	sc := *a.sc // the caller's scenario stays as it was
	for name, v := range values {
		sc.Operation.Path = strings.ReplaceAll(sc.Operation.Path, "{"+name+"}", url.PathEscape(v))
	}
	a.sc = &sc
	return a.templates()
}

// calibrate sends the plain request twice with fresh keys: both must be
// answered 2xx, and the oracle, if any, must count one effect for each.
// It keeps the faster time as the request's latency.
func (a *Auditor) calibrate(ctx context.Context) error {
	var keys []string
	for i := range CalibrationRequests {
		o, err := a.newOp(ctx, history.CheckCalibration)
		if err != nil {
			return err
		}
		e := a.send(ctx, req{label: label(0, checks.RoleCalibration, fmt.Sprint(i+1)), op: o, calibration: true})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		where := e.Request.Method + " " + e.Request.URL
		if e.Outcome != history.OK {
			return fmt.Errorf("%w: %s: %s", ErrTarget, where, e.Err)
		}
		if !e.Acked() {
			how := ""
			if a.minting() {
				how = " (with --key-from-answer its first request carries no key)"
			}
			return fmt.Errorf("%w: %s was answered %d, not 2xx%s: %s", ErrTarget, where, e.Status, how, e.Body)
		}
		if _, ok := a.minted(o.key); a.minting() && !ok {
			return fmt.Errorf("%w: %s was answered %d without a key in %s: the API does not return the key it mints there (--key-from-answer)",
				ErrConfig, where, e.Status, cmpOr(a.mintHeader, a.mintPath))
		}
		if a.latency == 0 || took(e) < a.latency {
			a.latency = took(e)
		}
		keys = append(keys, o.key)
	}
	if a.oracle == nil {
		return nil
	}
	a.effects(ctx, history.CheckCalibration, keys...)
	rd := a.reading(history.CheckCalibration)
	if rd.Err != "" {
		if errors.Is(ctx.Err(), context.Canceled) {
			return ctx.Err()
		}
		return fmt.Errorf("%w: the effects oracle cannot be read: %s", ErrConfig, rd.Err)
	}
	for _, k := range a.serverKeys(keys) {
		if n := rd.Effects[k]; n != 1 {
			return fmt.Errorf("%w: the effects oracle counts %d effects for key %s, which the API just answered 2xx once: it must count 1 (check --effects and --effects-path)", ErrConfig, n, k)
		}
	}
	return nil
}

// cut is the client deadline that cuts a request short: half the
// calibrated latency.
func (a *Auditor) cut() time.Duration { return max(a.latency/2, time.Millisecond) }
