package checks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// Result is a run's overall result against its expectation.
type Result string

const (
	// Met: every expectation held (exit 0).
	Met Result = "met"
	// NotMet: an invariant or threshold failed, or an expected violation was
	// not caught (exit 1).
	NotMet Result = "not_met"
	// Inconclusive: a check could not decide (exit 3).
	Inconclusive Result = "inconclusive"
)

// Threshold is one latency or error-rate limit and whether it held.
type Threshold struct {
	Name   string  `json:"name"` // "p99", "error_rate"
	Limit  float64 `json:"limit"`
	Actual float64 `json:"actual"`
	Unit   string  `json:"unit"` // "ms" or "ratio"
	OK     bool    `json:"ok"`
}

// Measured are the figures thresholds are judged on: per-op latency
// percentiles and the share of ops without a 2xx.
type Measured struct {
	P50, P90, P99, P999, Max time.Duration
	ErrorRate                float64
}

// Judgement is a run's decided result: every verdict, every threshold,
// and the result against the expectation with its reason.
type Judgement struct {
	Verdicts   []Verdict   `json:"verdicts"`
	Thresholds []Threshold `json:"thresholds"`
	// Findings are deviations from the expected profile (a mismatch
	// answered 400 where the draft says 422): kept apart from duplicate
	// effects and leaks, they fail a run only when FailOn is "medium".
	Findings []Finding `json:"findings"`
	// Warnings are things the judgement did not count but a reader should
	// know: effects under keys the run never sent.
	Warnings []string `json:"warnings"`
	Result   Result   `json:"result"`
	// Why explains Result in one sentence.
	Why string `json:"why"`
}

// Judge checks h's invariants on its readings, its thresholds on m, and
// decides the result against h's expectation. It reads only h (its
// Meta.Judge, attempts and readings) and m: a saved history is judged
// exactly as the live run was.
func Judge(h *history.History, m Measured) Judgement {
	j := NewJudger(h.Meta, h.Readings)
	j.Add(h)
	return j.Judgement(m)
}

// Judger judges a run given in parts, each part a history holding every
// op of some keys (and no op of another part's keys), so that a history
// larger than memory is judged one part at a time, exactly as Judge
// judges it whole. A part's ops keep their ids in the run (Op.ID) but
// sit at their index in the part, which its attempts' Op name; its ops
// are in id order, its attempts sorted (History.Sort).
type Judger struct {
	meta     history.Meta
	readings []history.Reading
	checks   []check // nil where the verdict is already decided
	verdicts []Verdict
	unsorted bool
	ops      int
	load     loadTally
	unsent   unsentTally
	mismatch map[int]int // profile deviations by status
	bite     biteTally   // faults planned and bitten (bite.go)
	faults   blame       // every operation's faults (attribution.go)
}

// NewJudger returns a Judger of the run meta describes, on its readings.
func NewJudger(meta history.Meta, readings []history.Reading) *Judger {
	obs := make(map[string]*history.Reading, len(readings))
	for i := range readings {
		obs[readings[i].Oracle] = &readings[i]
	}
	j := &Judger{meta: meta, readings: readings, mismatch: map[int]int{}}
	for _, inv := range meta.Judge.Invariants {
		c, v := newCheck(inv, obs[inv.Oracle])
		j.checks = append(j.checks, c)
		j.verdicts = append(j.verdicts, v)
	}
	return j
}

// Add judges one part of the run. h.Meta is not read: the run's is.
func (j *Judger) Add(h *history.History) {
	if len(h.Ops) == 0 {
		return
	}
	part := *h
	part.Meta = j.meta
	if !part.Sorted() {
		j.unsorted = true
		return
	}
	j.ops += len(part.Ops)
	// forged webhook deliveries are judged by rejects_forged alone: the
	// others judge the genuine ops
	genuine, forged := &part, (*history.History)(nil)
	if slices.ContainsFunc(part.Ops, isForged) {
		genuine = part.Select(func(op history.Op) bool { return !isForged(op) })
		forged = part.Select(isForged)
	}
	for i, c := range j.checks {
		switch {
		case c == nil:
		case j.meta.Judge.Invariants[i].Check == RejectsForged:
			if forged != nil {
				c.add(forged)
			}
		default:
			c.add(genuine)
		}
	}
	j.load.add(&part)
	j.unsent.add(&part)
	j.bite.add(&part)
	for i := range part.Ops {
		j.faults.add(&part.Meta, part.AttemptsOf(i))
	}
	profileDeviations(&part, j.mismatch)
}

func isForged(op history.Op) bool { return op.Check == history.CheckForged }

// Judgement returns the judgement of every part added, thresholds
// judged on m.
func (j *Judger) Judgement(m Measured) Judgement {
	verdicts := make([]Verdict, len(j.verdicts))
	for i, v := range j.verdicts {
		switch c := j.checks[i]; {
		case c == nil:
			verdicts[i] = v
		case j.unsorted:
			verdicts[i] = unknown(v, unsorted)
		case j.ops == 0:
			verdicts[i] = unknown(v, noOps)
		default:
			verdicts[i] = c.verdict(v)
			if b, ok := c.(blamer); ok && verdicts[i].Status == Fail {
				verdicts[i].Attribution = b.blamed().attribution(&j.faults)
			}
		}
	}
	meta := j.meta
	out := Judgement{
		Verdicts:   verdicts,
		Thresholds: Thresholds(meta.Judge.Thresholds, m),
	}
	miss := meta.Shard.Missing()
	if len(miss) > 0 {
		lostShards(out.Verdicts, miss)
	}
	out.Findings = profileFindings(meta.Judge.Profile, j.mismatch)
	out.Warnings = append(readingWarnings(j.readings), j.load.thin()...)
	out.Result, out.Why = Decide(meta.Judge.Expect, out.Verdicts, out.Thresholds, meta.Interrupted)
	if len(out.Findings) > 0 && meta.Judge.FailOn == SeverityMedium && out.Result == Met && meta.Judge.Expect != "violation" {
		out.Result, out.Why = NotMet, "spec finding (medium, --fail-on medium): "+out.Findings[0].Summary
	}
	if reason := j.unsent.reason(); reason != "" && out.Result == Met && !(meta.Judge.Expect == "violation" && caught(out.Verdicts)) {
		// Ops that never left the client: what held, held on a smaller
		// load than the one described.
		out.Result, out.Why = Inconclusive, reason
	}
	j.bite.decide(meta, &out) // no pass on faults that never bit
	if reason := j.load.vacuous(); reason != "" && !caught(out.Verdicts) {
		// Nothing was judged: "met" (or "not caught") would mean nothing.
		// A failure with evidence stays a failure.
		if !slow(out.Thresholds) {
			out.Result, out.Why = Inconclusive, reason
		}
	}
	if meta.Interrupted && meta.InterruptedIn != "" && out.Result == Inconclusive {
		out.Why += " (interrupted in the " + meta.InterruptedIn + ")"
	}
	if len(miss) > 0 && !caught(out.Verdicts) && (out.Result == Met || out.Result == Inconclusive || meta.Judge.Expect == "violation") {
		// A lost shard's ops were not judged: they may hold the very
		// duplicate the run was looking for. Another reason to be
		// inconclusive (an interrupted shard) is named after it.
		lost := fmt.Sprintf("%s never delivered %s: %s ops were not judged", shardNames(miss), pluralIts(len(miss)), pluralIts2(len(miss)))
		if out.Result == Inconclusive && out.Why != "" && !strings.Contains(out.Why, "never delivered") {
			lost += "; " + out.Why
		}
		out.Result, out.Why = Inconclusive, lost
	}
	judgeNemesis(&out, meta) // nemesis.go
	if meta.Aborted != "" {
		if out.Result == Met && meta.Judge.Expect != "violation" {
			// The live judge saw a failure the whole run does not show
			// (effects a store took back): a load cut short proves nothing.
			out.Result, out.Why = Inconclusive, "the load was stopped early, but the whole run's judgement found no failure"
		}
		out.Why += fmt.Sprintf(" (the load was stopped early, %s in, by abort_on_fail: %s)", meta.AbortedAt.Round(time.Millisecond), meta.Aborted)
	}
	return out
}

// wholeState are the invariants that compare the target's whole state
// (a counter, an account) with every op of the run: the ops of a lost
// shard changed that state, but are not in the history.
var wholeState = map[string]bool{ExactCounter: true, ConditionalUpdate: true}

// lostShards makes the verdicts that judge the whole state unknown when
// shards are missing, whatever they found: their reading includes the
// effects of ops the history does not have, so a failure may be the lost
// shard's ops and a pass proves nothing. Verdicts per key stand: a key
// belongs to one shard, and the delivered shards' keys are all there.
func lostShards(vs []Verdict, miss []int) {
	for i := range vs {
		if wholeState[vs[i].Invariant] && vs[i].Status != Unknown {
			vs[i].Status = Unknown
			vs[i].Reason = fmt.Sprintf("%s never delivered %s: the state read includes %s ops' effects, which the history lacks",
				shardNames(miss), pluralIts(len(miss)), pluralIts2(len(miss)))
		}
	}
}

func pluralIts2(n int) string {
	if n == 1 {
		return "its"
	}
	return "their"
}

func shardNames(miss []int) string {
	s := make([]string, len(miss))
	for i, m := range miss {
		s[i] = strconv.Itoa(m)
	}
	if len(miss) == 1 {
		return "shard " + s[0]
	}
	return "shards " + strings.Join(s, ", ")
}

func pluralIts(n int) string {
	if n == 1 {
		return "its history"
	}
	return "their histories"
}

func caught(vs []Verdict) bool {
	for _, v := range vs {
		if v.Status == Fail {
			return true
		}
	}
	return false
}

func slow(ts []Threshold) bool {
	for _, t := range ts {
		if !t.OK {
			return true
		}
	}
	return false
}

// loadTally counts what the run's ops got, for vacuous and thin.
type loadTally struct {
	ops, acked, answers int
	statuses            map[int]int
}

func (t *loadTally) add(h *history.History) {
	if t.statuses == nil {
		t.statuses = map[int]int{}
	}
	for i := range h.Ops {
		as := h.AttemptsOf(i)
		if len(as) == 0 {
			continue
		}
		t.ops++
		if history.State(as) == history.Acked {
			t.acked++
		}
		for k := range as {
			if as[k].Outcome == history.OK && !history.IsReplay(as[k].Fault) {
				t.statuses[as[k].Status]++
				t.answers++
			}
		}
	}
}

// vacuous says, in plain words, why too little of the run reached a
// definite answer to judge it, or "": no op acknowledged, and nothing but
// rejections, failures or unknowns came back.
func (t *loadTally) vacuous() string {
	ops, acked, answers := t.ops, t.acked, t.answers
	if ops == 0 || acked > 0 {
		return ""
	}
	if len(t.statuses) == 1 {
		for st, n := range t.statuses {
			why := fmt.Sprintf("every answer was %d (%d of %d) and no op was acknowledged: nothing was judged", st, n, answers)
			switch {
			case st == 401 || st == 403:
				why += "; the target rejected every request: check the credentials (an unset token?)"
			case st == 404 || st == 405:
				why += "; is the operation's method and path right?"
			case st >= 500:
				why += "; the target failed every request"
			}
			return why
		}
	}
	if answers == 0 {
		return fmt.Sprintf("no op got an answer (%d ops, every attempt failed or timed out): nothing was judged", ops)
	}
	return fmt.Sprintf("no op was acknowledged (0 of %d got a 2xx): nothing was judged", ops)
}

// thin says when fewer than half of the ops got a 2xx: the verdicts then
// rest on few answers (a run that got none is inconclusive instead).
func (t *loadTally) thin() []string {
	if t.acked == 0 || t.acked*2 >= t.ops {
		return nil
	}
	return []string{fmt.Sprintf("only %d of %d ops were acknowledged: the verdicts rest on few answers (see the statuses: rejected credentials, a wrong path, an overloaded target?)", t.acked, t.ops)}
}

// Thresholds compares m with the limits l; a zero limit is not checked.
// Latencies are reported in ms.
func Thresholds(l history.Thresholds, m Measured) []Threshold {
	out := []Threshold{}
	lat := []struct {
		name          string
		limit, actual time.Duration
	}{
		{"p50", l.P50, m.P50}, {"p90", l.P90, m.P90}, {"p99", l.P99, m.P99},
		{"p99.9", l.P999, m.P999}, {"max", l.Max, m.Max},
	}
	for _, t := range lat {
		if t.limit > 0 {
			out = append(out, Threshold{Name: t.name, Limit: ms(t.limit), Actual: ms(t.actual), Unit: "ms", OK: t.actual <= t.limit})
		}
	}
	if l.ErrorRate != nil {
		out = append(out, Threshold{Name: "error_rate", Limit: *l.ErrorRate, Actual: m.ErrorRate, Unit: "ratio", OK: m.ErrorRate <= *l.ErrorRate})
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Decide turns verdicts and thresholds into the run's result against
// expect ("pass" or "violation"). An interrupted run whose invariants all
// held is inconclusive: what did not run was not judged.
func Decide(expect string, verdicts []Verdict, thresholds []Threshold, interrupted bool) (Result, string) {
	var failed, unknown []string
	for _, v := range verdicts {
		switch v.Status {
		case Fail:
			failed = append(failed, v.Invariant)
		case Unknown:
			unknown = append(unknown, v.Invariant)
		}
	}
	var slow []string
	for _, t := range thresholds {
		if !t.OK {
			slow = append(slow, t.Name)
		}
	}
	if len(slow) > 0 {
		why := fmt.Sprintf("threshold exceeded: %s", strings.Join(slow, ", "))
		if len(failed) > 0 && expect != "violation" {
			why = fmt.Sprintf("invariant violated: %s; %s", strings.Join(failed, ", "), why)
		}
		return NotMet, why
	}
	if expect == "violation" {
		switch {
		case len(failed) > 0:
			return Met, "expected a violation and caught one: " + strings.Join(failed, ", ")
		case len(unknown) > 0:
			return Inconclusive, fmt.Sprintf("expected a violation; none caught, but %s could not decide", strings.Join(unknown, ", "))
		case len(verdicts) == 0:
			return Inconclusive, "expected a violation but the scenario checks no invariant"
		default:
			return NotMet, "expected a violation but every invariant held"
		}
	}
	switch {
	case len(failed) > 0:
		return NotMet, "invariant violated: " + strings.Join(failed, ", ")
	case len(unknown) > 0:
		return Inconclusive, "could not decide: " + strings.Join(unknown, ", ")
	case interrupted:
		return Inconclusive, "every invariant held on what ran, but the run was interrupted before its end"
	}
	return Met, "every invariant held"
}

// Severities of a finding, as --fail-on names them.
const (
	SeverityMedium = "medium"
)

// Finding is a deviation from the profile the API is expected to follow.
type Finding struct {
	Severity string `json:"severity"`
	Check    string `json:"check"`
	Summary  string `json:"summary"`
	// Count is how many answers deviated.
	Count int `json:"count"`
}

// profileDeviations counts, by status, the answers to a payload
// mismatch in h rejected with another 4xx than the profile's.
func profileDeviations(h *history.History, statuses map[int]int) {
	p := h.Meta.Judge.Profile
	if len(p.Mismatch) == 0 {
		return
	}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if a.Fault != history.FaultMismatch || a.Outcome != history.OK || a.Status < 400 || a.Status >= 500 {
			continue
		}
		if !history.Matches(p.Mismatch, a.Status) {
			statuses[a.Status]++
		}
	}
}

// profileFindings compares the answers the contract leaves a choice for
// with the profile's: a payload mismatch rejected with another 4xx than
// the profile's (counted by profileDeviations).
func profileFindings(p history.Profile, statuses map[int]int) []Finding {
	n := 0
	for _, c := range statuses {
		n += c
	}
	if n == 0 {
		return nil
	}
	name := p.Name
	if name == "" {
		name = "expected"
	}
	return []Finding{{Severity: SeverityMedium, Check: PayloadMismatch, Count: n,
		Summary: fmt.Sprintf("a payload mismatch was rejected with %s; the %s profile expects %s", statusText(statuses), name, strings.Join(p.Mismatch, " or "))}}
}

// readingWarnings says which oracles saw effects grow under keys the run
// never sent.
func readingWarnings(readings []history.Reading) []string {
	var out []string
	for _, r := range readings {
		if r.Strangers == 0 {
			continue
		}
		w := fmt.Sprintf("oracle %s: %s this run never sent gained effects during it", r.Oracle, plural(r.Strangers, "key", "keys"))
		if len(r.StrangerKeys) > 0 {
			w += " (e.g. " + strings.Join(r.StrangerKeys, ", ") + ")"
		}
		out = append(out, w+": another writer, or an API that rewrites the keys it is sent?")
	}
	return out
}
