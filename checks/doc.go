// Package checks decides, from a recorded history and the oracles'
// readings, whether each invariant held, and turns the verdicts,
// thresholds and the scenario's expectation into the run's result.
//
//	history (ops, attempts) ──┐
//	                          ├──> Check(h, invariant, reading) ──> Verdict ──┐
//	readings (oracles) ───────┘                    pass | fail | unknown     ├──> Decide ──> Result
//	measured latency, error rate ──> Thresholds ──────────────────────────────┘   met | not_met | inconclusive
//
// Everything here is a pure function of its inputs: no I/O, no clock, no
// network. The package imports history and the standard library only, so
// a saved run is judged offline exactly as it was judged live.
//
// Checkers have a three-state verdict. An op is acknowledged (some attempt
// got a 2xx), not sent (every attempt failed before a byte was written) or
// indeterminate (it may have been processed: a timeout, a lost ack, a
// non-2xx answer). An indeterminate op widens what is allowed to 0 or 1
// effect; it never hides a violation and never invents one. A verdict that
// cannot be decided (no reading, an oracle that could not read, an empty
// history) is Unknown, never Pass.
//
// Checks say where they did not look: an operation a check could not
// judge (no definite answer, a key still in flight within the grace) is
// counted apart as not judged (Verdict.NotJudged), never as held, and
// the summary says how many were judged and how many were not. Duplicate
// effects are not the only failure: processes fails for lost operations,
// a valid request refused or acknowledged without an effect.
//
// Ops are grouped by key: ops that share a key and a user are one logical
// operation (the server may deduplicate them), ops that share a key under
// different users are distinct operations (keys are scoped per user).
package checks
