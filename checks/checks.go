package checks

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

// Status is the three-state outcome of a check.
type Status string

const (
	// Pass means the invariant held for every key or op examined.
	Pass Status = "pass"
	// Fail means at least one key or op broke the invariant; the verdict
	// carries the evidence.
	Fail Status = "fail"
	// Unknown means the check could not decide: no observation, an oracle
	// that could not read, or nothing to check. Its Reason says why.
	Unknown Status = "unknown"
)

// The names of the invariant checkers, as scenarios spell them.
const (
	// AtMostOnce: no key has more than one effect.
	AtMostOnce = "at_most_once"
	// ExactlyOnce: at most once, and an acknowledged key has exactly one
	// effect, a never-sent key none, an indeterminate key 0 or 1.
	ExactlyOnce = "exactly_once"
	// SameResponse: every 2xx answer of an op has the status and normalised
	// body of its first 2xx answer.
	SameResponse = "same_response"
	// ExactCounter: after − before lies in [acknowledged, acknowledged +
	// indeterminate] ops.
	ExactCounter = "exact_counter"
	// ConditionalUpdate: balance = initial − Σ applied amounts, version
	// advanced once per applied op, no op applied twice.
	ConditionalUpdate = "conditional_update"
	// PayloadMismatch: every answer to the same key with another payload
	// (attempts marked history.FaultMismatch) is a 4xx rejection, never a 2xx.
	PayloadMismatch = "payload_mismatch"
	// Settles: no key stays stuck on in-flight answers (409) after its
	// first attempt ended, no key gets the same 5xx to every retry while
	// others are served, and (with an effects oracle) no operation has an
	// effect although its final answer told the client it failed.
	Settles = "settles"
	// Processes: every operation with a fresh key and a valid request is
	// processed (a 2xx within its retries and, with an effects oracle, an
	// effect); every refusal but the scenario's expected rejections is a
	// lost operation.
	Processes = "processes"
	// RejectsForged: every forged webhook delivery (a wrong signature, a
	// stale timestamp: operation.webhook.forged) is answered 4xx and,
	// with an effects oracle, has no effect.
	RejectsForged = "rejects_forged"
	// OrderedApply: each object's final state (a state oracle) is that of
	// its newest acknowledged event, whatever order its events arrived
	// in: an older event never overwrites a newer one.
	OrderedApply = "ordered_apply"
)

// Names returns the names of every invariant checker.
func Names() []string {
	return []string{AtMostOnce, ExactlyOnce, SameResponse, ExactCounter, ConditionalUpdate, PayloadMismatch, Settles, Processes, RejectsForged, OrderedApply}
}

// OracleKind returns the observation kind check reads ("effects",
// "counter", "account"), "" for a check that needs no oracle
// (same_response, payload_mismatch), and ok false for an unknown check.
func OracleKind(check string) (kind string, ok bool) {
	switch check {
	case AtMostOnce, ExactlyOnce:
		return history.KindEffects, true
	case ExactCounter:
		return history.KindCounter, true
	case ConditionalUpdate:
		return history.KindAccount, true
	case OrderedApply:
		return history.KindState, true
	case SameResponse, PayloadMismatch, Settles, Processes, RejectsForged:
		return "", true
	}
	return "", false
}

// OptionalOracleKind returns the kind of reading a check may use when its
// invariant names an oracle although it needs none: settles judges
// "charged but told it failed", processes "acknowledged but no effect",
// from an effects reading. "" for the others.
func OptionalOracleKind(check string) string {
	if check == Settles || check == Processes || check == RejectsForged {
		return history.KindEffects
	}
	return ""
}

// Verdict is the result of one invariant check, with counts and evidence.
type Verdict struct {
	Invariant string `json:"invariant"`
	Oracle    string `json:"oracle,omitempty"`
	Status    Status `json:"status"`
	// Summary is one human line, e.g. "37 of 500 keys have more than one
	// effect (41 extra)".
	Summary string `json:"summary"`
	// Reason says why the verdict is Unknown.
	Reason string `json:"reason,omitempty"`
	// Checked is how many keys (effects, accounts) or ops (counters,
	// responses) were examined.
	Checked int `json:"checked"`
	// Violations is how many of them broke the invariant. For
	// exact_counter it is the distance of the counter from its allowed
	// range.
	Violations int `json:"violations"`
	// Indeterminate is how many operations had an unknown outcome (0 or 1
	// effect allowed).
	Indeterminate int `json:"indeterminate"`
	// Extra is the number of effects beyond what was allowed, summed over
	// keys.
	Extra int `json:"extra"`
	// Missing is the number of acknowledged operations with no effect.
	Missing int `json:"missing"`
	// NotJudged is how many keys or ops the check could not judge (no
	// definite answer, an answer still in flight): neither held nor
	// broken.
	NotJudged int `json:"not_judged,omitempty"`
	// RejectedAsExpected is how many operations ended on a rejection the
	// scenario expects (processes).
	RejectedAsExpected int `json:"rejected_as_expected,omitempty"`
	// Refused is how many operations were refused although their request
	// was valid (processes).
	Refused int `json:"refused,omitempty"`
	// Counter details an exact_counter verdict.
	Counter *CounterDetail `json:"counter,omitempty"`
	// Examples are at most MaxExamples violations, sorted by op; never nil.
	Examples []Example `json:"examples"`
	// Attribution is which faults the violating operations had, beside
	// the run's share of them; nil unless the verdict failed in a run
	// that injected faults.
	Attribution *Attribution `json:"attribution,omitempty"`
}

// CounterDetail is the arithmetic of an exact_counter verdict.
type CounterDetail struct {
	Before        int64 `json:"before"`
	After         int64 `json:"after"`
	Acked         int64 `json:"acked"`
	Indeterminate int64 `json:"indeterminate"`
	Min           int64 `json:"min"`
	Max           int64 `json:"max"`
}

// Example is one violation with its evidence: the op (the first op of
// its key), what was observed, what was allowed, and every attempt made.
type Example struct {
	Op   int    `json:"op"`
	Key  string `json:"key"`
	User string `json:"user,omitempty"`
	// Effects is the key's effect count (applied entries for
	// conditional_update); 0 for same_response, payload_mismatch and
	// exact_counter, which do not count per key.
	Effects int `json:"effects"`
	// Want is what was allowed: "at most 1", "exactly 1", "0 or 1",
	// "exactly 0"; for same_response the first 2xx answer's status and
	// body fingerprint; for payload_mismatch "a 4xx (422)".
	Want     string            `json:"want"`
	Problem  string            `json:"problem"`
	Attempts []history.Attempt `json:"attempts"`
}

// MaxExamples is the most examples a verdict carries.
const MaxExamples = 10

// Check runs one invariant over h and obs. obs may be nil for
// same_response and payload_mismatch. A missing or unreadable observation,
// an observation of the wrong kind or an empty history gives Unknown, never
// Pass.
//
// Check does not modify h, but it builds h's attempt index on first use
// (History.AttemptsOf): do not call it concurrently on a history that was
// never read through AttemptsOf.
func Check(h *history.History, inv history.Invariant, obs *history.Reading) Verdict {
	c, v := newCheck(inv, obs)
	if c == nil {
		return v
	}
	if h == nil || len(h.Ops) == 0 {
		return unknown(v, noOps)
	}
	if !h.Sorted() {
		return unknown(v, unsorted)
	}
	c.add(h)
	return c.verdict(v)
}

const (
	noOps    = "the history has no ops"
	unsorted = "the history's attempts are not sorted by op and attempt number (History.Sort was not called)"
)

// check is one invariant's checker, given a history whole or in parts
// (each part every op of some keys) and then asked for its verdict.
type check interface {
	add(h *history.History)
	verdict(v Verdict) Verdict
}

// newCheck returns the checker of inv on obs, or nil and the Unknown
// verdict when inv cannot be judged on obs.
func newCheck(inv history.Invariant, obs *history.Reading) (check, Verdict) {
	v := Verdict{Invariant: inv.Check, Oracle: inv.Oracle, Examples: []Example{}}
	kind, ok := OracleKind(inv.Check)
	if !ok {
		return nil, unknown(v, fmt.Sprintf("unknown check %q (want one of %s)", inv.Check, strings.Join(Names(), ", ")))
	}
	if kind == "" && inv.Oracle != "" && OptionalOracleKind(inv.Check) != "" {
		kind = OptionalOracleKind(inv.Check)
	}
	if kind != "" {
		if reason := unusable(inv, obs, kind); reason != "" {
			return nil, unknown(v, reason)
		}
	}
	switch inv.Check {
	case AtMostOnce:
		return &effectsCheck{effects: obs.Effects}, v
	case ExactlyOnce:
		return &effectsCheck{effects: obs.Effects, exact: true}, v
	case SameResponse:
		return &responseCheck{}, v
	case PayloadMismatch:
		return &mismatchCheck{}, v
	case Settles:
		if inv.Oracle == "" {
			obs = nil
		}
		return &settlesCheck{obs: obs}, v
	case Processes:
		if inv.Oracle == "" {
			obs = nil
		}
		return &processesCheck{obs: obs}, v
	case RejectsForged:
		if inv.Oracle == "" {
			obs = nil
		}
		return &forgedCheck{obs: obs}, v
	case ExactCounter:
		return &counterCheck{obs: obs}, v
	case OrderedApply:
		return &orderCheck{states: obs.States}, v
	default: // ConditionalUpdate
		return newAccountCheck(obs.Account), v
	}
}

// Run checks every invariant, each with the observation of the oracle it
// names.
func Run(h *history.History, invs []history.Invariant, obs map[string]*history.Reading) []Verdict {
	out := make([]Verdict, 0, len(invs))
	for _, inv := range invs {
		out = append(out, Check(h, inv, obs[inv.Oracle]))
	}
	return out
}

// mergeExamples returns the examples of a and b with the lowest ops, at
// most MaxExamples, sorted by op; never nil.
func mergeExamples(a, b []Example) []Example {
	out := append(a, b...)
	if out == nil {
		return []Example{}
	}
	if len(b) > 0 && len(a) > 0 {
		slices.SortStableFunc(out, func(x, y Example) int { return cmp.Compare(x.Op, y.Op) })
	}
	return out[:min(len(out), MaxExamples)]
}

func unknown(v Verdict, reason string) Verdict {
	v.Status = Unknown
	v.Reason = reason
	v.Summary = "inconclusive: " + reason
	return v
}

// unusable returns why obs cannot serve a check that reads kind, or "".
func unusable(inv history.Invariant, obs *history.Reading, kind string) string {
	name := inv.Oracle
	switch {
	case obs == nil && name == "":
		return fmt.Sprintf("%s needs an oracle and names none", inv.Check)
	case obs == nil:
		return fmt.Sprintf("no observation from oracle %q", name)
	}
	if obs.Oracle != "" {
		name = obs.Oracle
	}
	switch {
	case obs.Err != "":
		return fmt.Sprintf("oracle %q could not read the state: %s", name, obs.Err)
	case obs.Kind != kind:
		return fmt.Sprintf("oracle %q read %q, %s needs %q", name, obs.Kind, inv.Check, kind)
	case kind == history.KindCounter && (obs.Before == nil || obs.After == nil):
		return fmt.Sprintf("oracle %q has no counter reading before and after the run", name)
	case kind == history.KindAccount && obs.Account == nil:
		return fmt.Sprintf("oracle %q has no account reading", name)
	}
	return ""
}

// plural is n and the word for n of a thing: "1 key", "2 keys".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
