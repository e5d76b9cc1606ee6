package trial

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/pause"
	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/queues"
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
	// Save, when set, is given each run the battery makes as soon as it
	// is judged, with the name of the directory it goes in:
	// the check's id and name (Q01-duplicate-publish), and for Q03's
	// first publish, -first after them. audit --out saves them there.
	Save func(run string, j *Judged)
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
	n := positiveOr(o.Messages, DefaultBatteryMessages)
	total := 0
	out := make([]PlannedCheck, len(ConsumerChecks))
	for i, c := range ConsumerChecks {
		p := PlannedCheck{ConsumerCheck: c}
		switch c.ID {
		case QDuplicatePublish:
			p.Messages = 2 * n
		case QCutConsumer:
			p.Messages = max(sc.Load.Ops, 10*n) // a cut bites a share of the chunks: enough of them
			switch {
			case sc.Operation.Publish.Topic != "":
				p.Skip = "a consumer_cut cannot be proven on Kafka: no broker counts what a group fetches again (docs/scenario.md)"
			case cutOf(sc) == nil:
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

// Planned is how many messages plan publishes, copies included and
// retries aside.
func Planned(plan []PlannedCheck) int {
	n := 0
	for _, p := range plan {
		if p.Skip == "" {
			n += p.Messages
		}
	}
	return n
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
// scenario or broker the battery could not start with (no scorecard
// then). A check whose run could not be made after another was judged is
// unknown with its error, and the checks after it are skipped: what was
// judged is kept.
func Battery(ctx context.Context, sc *scenarios.Scenario, o BatteryOptions) (*checks.Scorecard, error) {
	plan, err := BatteryPlan(sc, o)
	if err != nil {
		return nil, err
	}
	b := &battery{sc: sc, o: o, n: positiveOr(o.Messages, DefaultBatteryMessages), card: &checks.Scorecard{FormatVersion: checks.ScorecardFormat,
		Method: "PUBLISH", Oracle: oracleNames(sc), Checks: []checks.ContractCheck{}, FailOn: o.FailOn}}
	if u, err := url.Parse(cmp.Or(append([]string{o.Target}, sc.Targets()...)...)); err == nil && u.Host != "" {
		b.card.Target = redact.Options{Path: o.RedactPath}.URL(u) // the broker, its password masked
	}
	var interrupted, stopped error
	ran := false
	for _, p := range plan {
		row := checks.ContractCheck{ID: p.ID, Name: p.Name, Severity: p.Severity, Evidence: []checks.Evidence{}}
		switch {
		case p.Skip != "":
			row.Result, row.Summary = checks.Skipped, "skipped: "+p.Skip
		case interrupted != nil:
			row.Result, row.Summary = checks.Skipped, "skipped: the audit was interrupted before this check"
		case stopped != nil:
			row.Result, row.Summary = checks.Skipped, "skipped: an earlier check's run could not be made"
		default:
			if o.Progress != nil {
				o.Progress(p.ID, p.Name)
			}
			err := b.run(ctx, p, &row)
			switch {
			case ctx.Err() != nil:
				interrupted = ctx.Err()
				if row.Result == "" {
					row.Result, row.Summary = checks.Skipped, "skipped: interrupted"
				}
			case err != nil && !ran:
				return nil, err // the first run could not be made: nothing was judged
			case err != nil:
				stopped = err
				row.Result, row.Summary = checks.Unknown, "its run could not be made: "+err.Error()
			}
			ran = true
		}
		b.card.Checks = append(b.card.Checks, row)
	}
	b.card.Interrupted = interrupted != nil
	b.card.Decide()
	return b.card, interrupted
}

// positiveOr is n when it is above zero, else def (an option left 0).
func positiveOr[T int | time.Duration](n, def T) T {
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
	// alive is true once a run without a poison message drained: the
	// consumer runs, so a poison's run in which it applied nothing is
	// the poison's doing.
	alive bool
}

// variant is sc with faults fs and n ops in a closed load, expected to
// pass. A scenario's consumer_cut stays in every variant: its consumer
// reaches the broker through the cut's proxy, which passes everything
// unless the run cuts (runOnce).
func (b *battery) variant(fs ...scenarios.Fault) *scenarios.Scenario {
	v := *b.sc
	if cut := cutOf(b.sc); cut != nil && !slices.ContainsFunc(fs, func(f scenarios.Fault) bool { return f.Kind == faults.KindConsumerCut }) {
		fs = append(fs, *cut)
	}
	v.Faults, v.Expect = fs, scenarios.ExpectPass // the battery judges the consumer, not a scenario's expectation of it
	v.Thresholds = scenarios.Thresholds{}         // nor its latency
	v.Load.Ops, v.Load.Duration, v.Load.Rate, v.Load.Stages = b.n, 0, 0, nil
	v.Load.Concurrency = min(positiveOr(v.Load.Concurrency, 8), b.n)
	return &v
}

// runMode is how runOnce runs a variant.
type runMode struct {
	// cut: the consumer_cut cuts (else its proxy passes everything).
	cut bool
	// poison: a poison message is published before the load, and the
	// oracles are read even when the queue did not drain.
	poison bool
}

// runOnce runs v with keys (and a seed) of nonce; the run's judgement,
// why the consumer had not drained ("" when it had), and why the poison
// was not confirmed (nil when it was, or none was sent).
func (b *battery) runOnce(ctx context.Context, v *scenarios.Scenario, nonce uint64, m runMode, run string) (*Judged, string, error, error) {
	o := b.o.Options
	o.Seed, o.KeyNonce = nonce, nonce
	t, err := Prepare(ctx, v, o)
	if err != nil {
		return nil, "", nil, err
	}
	if t.cut != nil {
		t.cut.off = !m.cut
	}
	t.poisonFirst, t.readUndrained = m.poison, m.poison
	h, loadErr := t.Load(ctx)
	t.Observe(ctx, h)
	t.Close()
	j, err := judgeIn(h, o.SpillDir)
	if err != nil {
		return nil, "", nil, err
	}
	j.Err = loadErr
	for _, a := range h.Attempts {
		b.card.Requests += max(a.Copies, 1)
	}
	if m.poison && t.poisonErr == nil {
		b.card.Requests++
	}
	if !m.poison && t.undrained == "" && j.Judgement.Result != checks.Inconclusive {
		b.alive = true
	}
	if b.o.Save != nil {
		b.o.Save(run, j)
	}
	return j, t.undrained, t.poisonErr, nil
}

// run runs check c into row.
func (b *battery) run(ctx context.Context, c PlannedCheck, row *checks.ContractCheck) error {
	row.JudgedBy = checks.ByEffects
	run := c.ID + "-" + c.Name
	switch c.ID {
	case QDuplicatePublish:
		j, _, _, err := b.runOnce(ctx, b.variant(scenarios.Fault{Kind: "duplicate", Rate: 1, Copies: 2}), RandomSeed(), runMode{}, run)
		if err != nil {
			return err
		}
		score(row, j, fmt.Sprintf("%d messages, each published twice at once", b.n))
	case QCutConsumer:
		cut := cutOf(b.sc)
		v := b.variant(*cut)
		v.Load.Ops = c.Messages
		j, _, _, err := b.runOnce(ctx, v, RandomSeed(), runMode{cut: true}, run)
		if err != nil {
			return err
		}
		score(row, j, fmt.Sprintf("%d messages, the consumer's connection cut at rate %g", v.Load.Ops, cut.Rate))
	case QLateRedelivery:
		nonce, late := RandomSeed(), positiveOr(b.o.Late, time.Second)
		v := b.variant()
		first, _, _, err := b.runOnce(ctx, v, nonce, runMode{}, run+"-first")
		if err != nil {
			return err
		}
		if ctx.Err() != nil { // interrupted in the first publish: nothing was judged
			return ctx.Err()
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
		again, _, _, err := b.runOnce(ctx, v, nonce, runMode{}, run)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		what := fmt.Sprintf("%d messages consumed, then published again with the same ids %s later", b.n, late)
		// An op whose every confirmed copy the broker dropped as a
		// duplicate handed the consumer nothing to dedup.
		dropped, stored := map[int]bool{}, map[int]bool{}
		for _, a := range again.History.Attempts {
			switch {
			case a.Acked() && a.Status == queues.DuplicateStatus:
				dropped[a.Op] = true
			case a.Acked():
				stored[a.Op] = true
			}
		}
		for op := range stored {
			delete(dropped, op)
		}
		if len(dropped) > 0 && len(stored) == 0 && again.Judgement.Result != checks.NotMet {
			row.Result = checks.Unknown
			row.Summary = what + ": unknown: the broker dropped every one as a duplicate of the first (JetStream's Nats-Msg-Id within the stream's duplicate window): no consumer was handed one. Audit again with --retention longer than the window, or put the id in another header to test the consumer"
			return nil
		}
		if len(dropped) > 0 {
			what += fmt.Sprintf(" (%d of them dropped by the broker as duplicates)", len(dropped))
		}
		score(row, again, what)
	case QPoisonThenValid:
		what := fmt.Sprintf("a message whose body no consumer can decode, then %d valid ones", b.n)
		const stuck = "A consumer stuck on a message it can never handle stalls what comes after it (a log's partition, a queue's prefetch): set it aside (a dead-letter queue, or acknowledge and log it)"
		j, undrained, poisonErr, err := b.runOnce(ctx, b.variant(), RandomSeed(), runMode{poison: true}, run)
		if err != nil {
			return err
		}
		score(row, j, what)
		switch {
		case poisonErr != nil:
			row.Result, row.Summary = checks.Unknown, what+": "+poisonErr.Error()
		case row.Result == checks.Unknown && undrained != "" && b.alive:
			// an earlier run drained: the consumer runs, and applied
			// nothing after the poison
			row.Result = checks.Fail
			row.Summary = what + ": " + undrained + ", and no valid message was applied (" + j.Judgement.Why + "). " + stuck
		case row.Result == checks.Unknown && undrained != "":
			row.Summary = what + ": " + undrained + ", and no valid message was applied: the consumer is stuck on the poison, or not running (no other check's run drained to tell; run Q04 with Q01)"
		case row.Result == checks.Fail && undrained != "":
			row.Summary += "; " + undrained + ". " + stuck
		case row.Result == checks.Pass && undrained != "":
			// every valid message applied once; the poison never settled
			row.Result, row.Severity = checks.Fail, checks.Medium
			row.Summary = what + ": every valid message applied once, but " + undrained + ". What is left is likely the poison: a consumer that hands it back forever never settles it; one that sets it aside after an idle time longer than quiet passes with a longer --quiet-period"
		}
	}
	return nil
}

// score sets row from a run's judgement: pass when met, fail when not,
// unknown (with why) otherwise.
func score(row *checks.ContractCheck, j *Judged, what string) {
	var lines []string
	for _, v := range j.Judgement.Verdicts {
		lines = append(lines, fmt.Sprintf("%s: %s", v.Invariant, cmp.Or(v.Summary, v.Reason)))
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
		if detail != "" {
			detail = " (" + detail + ")"
		}
		detail = j.Judgement.Why + detail
	}
	row.Summary = what + ": " + detail
	row.Evidence = evidenceOf(j.History, j.Judgement)
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
