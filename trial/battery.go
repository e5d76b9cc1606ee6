package trial

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/pause"
	"github.com/idemcheck/idemcheck/scenarios"
)

// The consumer battery: what `idemcheck audit` does to a queue scenario.
// Where the HTTP battery sends probes and judges their answers, a
// consumer has no answer to judge: each check is a short run of the
// scenario (its publish, oracles and invariants), shaped to provoke one
// way a consumer applies a message twice or not at all, and judged as a
// run is. A check holds when its run's invariants are met, fails when
// they are not, and is unknown when the run could not tell (its faults
// did not bite, the consumer did not drain).

// Consumer check ids, in the order the battery runs them.
const (
	QDuplicatePublish = "Q01"
	QCutConsumer      = "Q02"
	QLateRedelivery   = "Q03"
	QPoisonThenValid  = "Q04"
)

// ConsumerCheck is one check of the consumer battery.
type ConsumerCheck struct {
	ID, Name string
	Severity checks.Severity
	// Probe says what the check publishes and what it requires.
	Probe string
}

// ConsumerChecks are the consumer battery's checks, in the order it runs
// them (the poison last: a consumer it stalls stays stalled).
var ConsumerChecks = []ConsumerCheck{
	{QDuplicatePublish, "duplicate-publish", checks.Critical,
		"every message published twice at once (a producer's double send): each applied once"},
	{QCutConsumer, "cut-consumer", checks.Critical,
		"the scenario's consumer_cut: the consumer's connection cut between a delivery and its ack, so the broker redelivers: each applied once, none lost"},
	{QLateRedelivery, "late-redelivery", checks.Critical,
		"the messages published, consumed, then published again with the same ids after --retention (the consumer's dedup window; 1s without it): each applied once"},
	{QPoisonThenValid, "poison-then-valid", checks.High,
		"a message no consumer can decode, then valid ones: the valid ones applied once each and the queue drained (a poison message is set aside, not retried forever)"},
}

// BatteryOptions shape the consumer battery.
type BatteryOptions struct {
	// Options are every run's (target, service, environment, secrets,
	// observer); Seed and KeyNonce are drawn per check.
	Options
	// Messages is how many messages each check publishes; 0 means 10.
	Messages int
	// Late is how long the late redelivery waits; 0 means a second.
	Late time.Duration
	// Checks are the ids to run; empty runs them all.
	Checks []string
	// MaxMessages caps the messages the battery publishes (retries
	// aside): a check that no longer fits is skipped. 0: no cap.
	MaxMessages int
	// FailOn is the failing severity ("" or "medium").
	FailOn string
	// Progress hears each check's start.
	Progress func(id, name string)
}

// DefaultBatteryMessages is how many messages a consumer check publishes.
const DefaultBatteryMessages = 10

// PlannedCheck is a consumer check as the battery will run it.
type PlannedCheck struct {
	ConsumerCheck
	// Messages is how many messages it publishes, copies included and
	// the runner's retries aside.
	Messages int
	// Skip says why it will not run; "" when it will.
	Skip string
}

// BatteryPlan is what the battery will do to sc: every check, with its
// messages or why it is skipped.
func BatteryPlan(sc *scenarios.Scenario, o BatteryOptions) ([]PlannedCheck, error) {
	if !sc.IsQueue() {
		return nil, errors.New("the consumer battery audits a queue scenario (operation.publish)")
	}
	for _, id := range o.Checks {
		if !slices.ContainsFunc(ConsumerChecks, func(c ConsumerCheck) bool { return c.ID == id }) {
			return nil, fmt.Errorf("--checks %s: a queue scenario's checks are Q01 to Q04", id)
		}
	}
	n := cmpOr(o.Messages, DefaultBatteryMessages)
	total := 0
	out := make([]PlannedCheck, len(ConsumerChecks))
	for i, c := range ConsumerChecks {
		p := PlannedCheck{ConsumerCheck: c}
		switch c.ID {
		case QDuplicatePublish:
			p.Messages = 2 * n
		case QCutConsumer:
			p.Messages = max(sc.Load.Ops, 10*n) // a cut bites a share of the chunks: enough of them
			if cutOf(sc) == nil {
				p.Skip = "the scenario has no consumer_cut fault; give it one (faults: [{kind: consumer_cut, rate: 0.2, listen: HOST:PORT}]) and point the consumer at its listen address (docs/scenario.md)"
			}
		case QLateRedelivery:
			p.Messages = 2 * n
			if len(perMessage(sc)) == 0 {
				p.Skip = "the scenario judges no message's own effects (exactly_once or at_most_once): a count (exact_counter) cannot tell a republished message's effect from a new one's"
			}
		case QPoisonThenValid:
			p.Messages = n + 1
		}
		switch {
		case len(o.Checks) > 0 && !slices.Contains(o.Checks, c.ID):
			p.Skip = "not selected (--checks)"
		case p.Skip == "" && o.MaxMessages > 0 && total+p.Messages > o.MaxMessages:
			p.Skip = fmt.Sprintf("its %d messages no longer fit under the cap of %d (--max-requests)", p.Messages, o.MaxMessages)
		case p.Skip == "":
			total += p.Messages
		}
		out[i] = p
	}
	return out, nil
}

// perMessage are sc's invariants that judge each message's own effects
// (exactly_once, at_most_once).
func perMessage(sc *scenarios.Scenario) []scenarios.Invariant {
	var out []scenarios.Invariant
	for _, inv := range sc.Invariants {
		if kind, _ := checks.OracleKind(inv.Check); kind == history.KindEffects {
			out = append(out, inv)
		}
	}
	return out
}

// cutOf is sc's consumer_cut fault, nil without one.
func cutOf(sc *scenarios.Scenario) *scenarios.Fault {
	for i := range sc.Faults {
		if sc.Faults[i].Kind == "consumer_cut" {
			return &sc.Faults[i]
		}
	}
	return nil
}

// Battery runs the consumer battery on sc, a queue scenario, and scores
// it. The scorecard holds every check, skipped ones with their reason;
// the error is an interruption, beside the scorecard of what ran, or a
// scenario or broker the battery cannot run with (no scorecard then).
func Battery(ctx context.Context, sc *scenarios.Scenario, o BatteryOptions) (*checks.Scorecard, error) {
	plan, err := BatteryPlan(sc, o)
	if err != nil {
		return nil, err
	}
	b := &battery{sc: sc, o: o, n: cmpOr(o.Messages, DefaultBatteryMessages), card: &checks.Scorecard{FormatVersion: checks.ScorecardFormat,
		Method: "PUBLISH", Oracle: oracleNames(sc), Checks: []checks.ContractCheck{}, FailOn: o.FailOn}}
	var interrupted error
	for _, p := range plan {
		row := checks.ContractCheck{ID: p.ID, Name: p.Name, Severity: p.Severity, Evidence: []checks.Evidence{}}
		switch {
		case p.Skip != "":
			row.Result, row.Summary = checks.Skipped, "skipped: "+p.Skip
		case interrupted != nil:
			row.Result, row.Summary = checks.Skipped, "skipped: the audit was interrupted before this check"
		default:
			if o.Progress != nil {
				o.Progress(p.ID, p.Name)
			}
			err := b.run(ctx, p, &row)
			if ctx.Err() != nil {
				interrupted = ctx.Err()
				if row.Result == "" {
					row.Result, row.Summary = checks.Skipped, "skipped: interrupted"
				}
			} else if err != nil {
				return nil, err
			}
		}
		b.card.Checks = append(b.card.Checks, row)
	}
	b.card.Target = b.target
	b.card.Interrupted = interrupted != nil
	b.card.Decide()
	return b.card, interrupted
}

func cmpOr(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// oracleNames are the names of sc's oracles, or "none".
func oracleNames(sc *scenarios.Scenario) string {
	var names []string
	for _, o := range sc.Oracles {
		names = append(names, o.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// battery is one run of the consumer battery.
type battery struct {
	sc   *scenarios.Scenario
	o    BatteryOptions
	n    int
	card *checks.Scorecard
	// target is the broker as the runs name it (redacted).
	target string
	// drained is true once a run without a poison message drained: the
	// consumer runs, so a queue left undrained after a poison is the
	// poison's doing.
	drained bool
}

// variant is sc with faults fs and n ops in a closed load, expected to
// pass.
func (b *battery) variant(fs ...scenarios.Fault) *scenarios.Scenario {
	v := *b.sc
	v.Faults, v.Expect = fs, scenarios.ExpectPass // the battery judges the consumer, not a scenario's expectation of it
	v.Thresholds = scenarios.Thresholds{}         // nor its latency
	v.Load.Ops, v.Load.Duration, v.Load.Rate, v.Load.Stages = b.n, 0, 0, nil
	v.Load.Concurrency = min(cmpOr(v.Load.Concurrency, 8), b.n)
	return &v
}

// runOnce runs v with keys of its own (nonce), or the nonce given; the
// run's judgement, and why the consumer had not drained ("" when it had).
func (b *battery) runOnce(ctx context.Context, v *scenarios.Scenario, nonce uint64, poison bool) (*Judged, string, error) {
	o := b.o.Options
	o.Seed, o.KeyNonce = nonce, nonce
	t, err := Prepare(ctx, v, o)
	if err != nil {
		return nil, "", err
	}
	b.target = t.redacted(t.target)
	if poison {
		if err := t.poison(ctx); err != nil {
			t.Close()
			return nil, "", err
		}
	}
	h, loadErr := t.Load(ctx)
	t.Observe(ctx, h)
	t.Close()
	j, err := judgeIn(h, o.SpillDir)
	if err != nil {
		return nil, "", err
	}
	j.Err = loadErr
	b.card.Requests += len(h.Attempts)
	if poison {
		b.card.Requests++
	}
	if t.undrained == "" && !poison {
		b.drained = true
	}
	return j, t.undrained, nil
}

// run runs check c into row.
func (b *battery) run(ctx context.Context, c PlannedCheck, row *checks.ContractCheck) error {
	row.JudgedBy = checks.ByEffects
	switch c.ID {
	case QDuplicatePublish:
		j, _, err := b.runOnce(ctx, b.variant(scenarios.Fault{Kind: "duplicate", Rate: 1, Copies: 2}), RandomSeed(), false)
		if err != nil {
			return err
		}
		score(row, j, fmt.Sprintf("%d messages, each published twice at once", b.n))
	case QCutConsumer:
		cut := cutOf(b.sc)
		v := b.variant(*cut)
		v.Load.Ops = c.Messages
		j, _, err := b.runOnce(ctx, v, RandomSeed(), false)
		if err != nil {
			return err
		}
		score(row, j, fmt.Sprintf("%d messages, the consumer's connection cut at rate %g", v.Load.Ops, cut.Rate))
	case QLateRedelivery:
		nonce, late := RandomSeed(), cmpOrDur(b.o.Late, time.Second)
		v := b.variant()
		first, _, err := b.runOnce(ctx, v, nonce, false)
		if err != nil {
			return err
		}
		if first.Judgement.Result != checks.Met {
			row.Result = checks.Unknown
			row.Summary = "unknown: the first publish of the messages was not judged sound, so a second tells nothing: " + first.Judgement.Why
			return nil
		}
		if !pause.For(ctx, late) {
			return ctx.Err()
		}
		v.Invariants = perMessage(b.sc) // a count would read the republish as new messages
		again, _, err := b.runOnce(ctx, v, nonce, false)
		if err != nil {
			return err
		}
		score(row, again, fmt.Sprintf("%d messages consumed, then published again with the same ids %s later", b.n, late))
	case QPoisonThenValid:
		what := fmt.Sprintf("a message whose body no consumer can decode, then %d valid ones", b.n)
		j, undrained, err := b.runOnce(ctx, b.variant(), RandomSeed(), true)
		var pe *poisonError
		if errors.As(err, &pe) {
			row.Result, row.Summary = checks.Unknown, what+": "+pe.Error()
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case undrained != "" && b.drained && ctx.Err() == nil:
			row.Result = checks.Fail
			row.Summary = what + ": " + undrained + ". A consumer that retries a message it can never handle stalls (a log's partition) or never settles (a queue's pending list): set it aside (a dead-letter queue, or acknowledge it and log it)"
		case undrained != "" && !b.drained:
			row.Result = checks.Unknown
			row.Summary = what + ": " + undrained + "; no other check's run drained either, so this says nothing of the poison: check that the consumer runs"
		default:
			score(row, j, what)
		}
	}
	return nil
}

func cmpOrDur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// score sets row from a run's judgement: pass when met, fail when not,
// unknown (with why) otherwise.
func score(row *checks.ContractCheck, j *Judged, what string) {
	var lines []string
	for _, v := range j.Judgement.Verdicts {
		lines = append(lines, fmt.Sprintf("%s: %s", v.Invariant, cmpOrStr(v.Summary, v.Reason)))
	}
	detail := strings.Join(lines, "; ")
	switch {
	case j.Err != nil && errors.Is(j.Err, context.Canceled):
		row.Result, row.Summary = checks.Skipped, what+": interrupted"
		return
	case j.Judgement.Result == checks.Met:
		row.Result = checks.Pass
	case j.Judgement.Result == checks.NotMet:
		row.Result = checks.Fail
	default:
		row.Result = checks.Unknown
		detail = j.Judgement.Why + cond(detail != "", " ("+detail+")", "")
	}
	row.Summary = what + ": " + detail
	row.Evidence = evidenceOf(j.History, j.Judgement)
}

func cmpOrStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func cond(ok bool, a, b string) string {
	if ok {
		return a
	}
	return b
}

// evidenceOf are the publishes behind a failed run's first violations:
// each attempt of up to three keys the invariants named.
func evidenceOf(h *history.History, jm checks.Judgement) []checks.Evidence {
	out := []checks.Evidence{}
	keys := map[string]bool{}
	for _, v := range jm.Verdicts {
		for _, e := range v.Examples {
			if len(keys) < 3 {
				keys[e.Key] = true
			}
		}
	}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		key := h.Ops[a.Op].Key
		if !keys[key] {
			continue
		}
		ev := checks.Evidence{Probe: fmt.Sprintf("op %d attempt %d", a.Op, a.N), Request: "PUBLISH " + h.Meta.Target, Key: key,
			Status: a.Status, Error: a.Err}
		if a.Fault != "" {
			ev.Fault = a.Fault
		}
		out = append(out, ev)
	}
	return out
}
