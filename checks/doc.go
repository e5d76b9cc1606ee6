// Package checks reads the real state of a target through oracles and
// decides, from that observation and the recorded history, whether each
// invariant held.
//
//	history (ops, attempts) ──┐
//	                          ├──> Check(h, invariant, observation) ──> Verdict
//	oracle ──> Observation ───┘                                        pass | fail | unknown
//
// Checkers are pure functions over a recorded history with a three-state
// verdict. An op is acknowledged (some attempt got a 2xx), not sent (every
// attempt failed before a byte was written) or indeterminate (it may have
// been processed: a timeout, a lost ack, a non-2xx answer). An indeterminate
// op widens what is allowed to 0 or 1 effect; it never hides a violation and
// never invents one. A verdict that cannot be decided (no observation, an
// oracle that could not read, an empty history) is Unknown, never Pass.
//
// Ops are grouped by key: ops that share a key and a user are one logical
// operation (the server may deduplicate them), ops that share a key under
// different users are distinct operations (keys are scoped per user).
//
// Oracles read the state over HTTP (HTTPEffects, HTTPCounter, HTTPAccount),
// selecting values with RFC 9535 JSONPath (Select).
package checks
