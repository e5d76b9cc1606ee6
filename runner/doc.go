// Package runner drives a scenario's load against a target and records
// every attempt in a history.
//
// Run schedules ops in a closed model (load.concurrency workers, each taking
// the next op as soon as the previous one is done) or an open model
// (load.rate ops per second from a pacer, whatever the answers do, with up to
// load.max_in_flight ops at once). Each op gets a key drawn from the seed and
// its sequence number (or rendered from operation.key.value), so keys, fault
// placement, jitter and rendered bodies are the same for the same seed
// whatever the scheduling:
//
//	pacer or counter --op i--> worker --attempt n--> faults.Transport --> target
//	                             |   ^                      |
//	                             |   +--retry (same key)----+ (Plan.Pick(i, n))
//	                             v
//	                     per-worker records --merge, sort--> history.History
//	                             ^
//	  first 2xx --> replayer (operation.replay: wait after, same key,
//	                same or other body, Fault "replay" / "mismatch")
//
// Latency is measured from each attempt's intended start (the pacer's
// schedule in the open model), so queueing is not hidden (coordinated
// omission). The history is the source of truth; Latency builds
// HdrHistograms from it.
//
// Every response body is read to its end by one bounded reader: the first
// Options.MaxBody bytes are kept for the fingerprint (internal/canon, used
// by the same_response invariant) and the kept fields, the rest is counted
// and hashed, never held, and a body that never ends is cut off by the
// request's context; the faults that read answers ahead of the runner keep
// the same cap. Every request is bounded by Options.RequestTimeout. With
// several Options.Targets, each attempt goes to a target drawn from the
// seed, as a load balancer would spread them. Setup sends a scenario's
// setup requests before the load. A target's userinfo is sent as Basic
// authorization with every request; the secrets a run sends are scrubbed
// from the evidence, fields and errors it records.
package runner
