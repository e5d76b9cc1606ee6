// Package runner drives a scenario's load against a target and records
// every attempt in a history.
//
// Run schedules ops in a closed model (load.concurrency workers, each taking
// the next op as soon as the previous one is done) or an open model
// (load.rate ops per second on the pacer's schedule, whatever the answers
// do: workers take the next op and wait for its time, and more are started
// while ops are due that none took, up to load.max_in_flight). With
// Options.Shard it makes one shard's ops of a run shared by several
// processes (see history.Shard). Each op gets a key drawn from the seed and
// its sequence number (or rendered from operation.key.value), so keys, fault
// placement, jitter and rendered bodies are the same for the same seed
// whatever the scheduling:
//
//	pacer or counter --op i--> worker --attempt n--> faults.Transport --> h1 --> target
//	                             |   ^                      |
//	                             |   +--retry (same key)----+ (Plan.Pick(i, n))
//	                             v
//	                     per-worker records --merge, sort--> history.History
//	                             ^
//	  first 2xx --> replayer (operation.replay: wait after, same key,
//	                same or other body, Fault "replay" / "mismatch")
//
// Requests go through the Client, over internal/h1, an HTTP/1.1 client
// that writes each request once and never resends one, over net/http for
// what it does not handle (https, proxies), unless Options.Transport is
// given. The Client is the one way idemcheck sends to the API under test:
// the audit's probes send through it too (Client.Send), so every exchange
// of every command is recorded alike.
//
// A target that is not a request/response HTTP API (a message queue, a
// webhook receiver) plugs in as a Sender (Options.Sender): one package
// that renders and sends an attempt and records what came of it. The
// runner's keys, fault placement, retries, pacing and history, and the
// oracles, checks and reports after them, stay as they are:
//
//	type publisher struct{ ch *amqp.Channel }
//
//	func (p publisher) Send(ctx context.Context, v scenarios.Vars, f faults.Fault, a *history.Attempt, now func() time.Duration) error {
//		a.Start = now()
//		err := p.ch.PublishWithContext(ctx, "", "charges", false, false, amqp.Publishing{MessageId: v.Key, ...})
//		a.End = now()
//		... // ok when confirmed, info when the confirm was lost, fail when certainly not published
//	}
//
//	runner.Run(ctx, sc, runner.Options{Target: u, Seed: seed, Sender: publisher{ch}})
//
// sender_test.go runs one against an in-memory queue and catches its
// naive consumer with the exactly_once checker, unchanged.
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
// from the evidence, fields and errors it records. DebugTransport traces
// the first exchanges and DryRun renders a run's plan and first requests
// without sending them, both with secrets masked.
package runner
