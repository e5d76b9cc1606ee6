// Package faults injects the network faults that make clients retry: a lost
// acknowledgement, a client-side timeout, a duplicated send, a connection
// reset before sending, and added latency.
//
// Each fault is a small type behind the Fault interface, one file each. A
// Plan decides, from a seed and nothing else, which fault (if any) applies to
// attempt n of op k, so a run is reproducible whatever the scheduling. The
// chosen fault rides on the request's context and the Transport applies it:
//
//	runner --Plan.Pick(op, attempt)--> Fault
//	   |                                  |
//	   +-- req.WithContext(WithFault(ctx, f))
//	                     |
//	                     v
//	   Transport.RoundTrip --f.Inject(Base, req)--> Base (http.Transport) --> target
//
// Proxy serves the same faults to clients that are not idemcheck: an
// httputil.ReverseProxy over the same Transport that picks a fault for every
// incoming request; Proxy.Serve serves it on a listener until its context
// ends. ParseSpec reads a fault as its --fault flag writes it
// (timeout=0.05,after=50ms); a scenario writes the same Spec in YAML.
// TCPProxy does the same for a service's dependencies (Redis, Postgres),
// with the faults of TCPFaults (ParseBytes reads its bandwidth).
//
// The faults that read an answer ahead of the client (timeout, duplicate,
// drop_ack) keep at most Transport.MaxBody bytes of it, as a *Body that
// also knows the real size and a hash of every byte; the rest is read and
// dropped, until the body ends or the request's context does. The answers
// a fault received besides the one it returns (the other copies of a
// duplicate, the answer drop_ack hides) go to the Answers the request's
// context carries (WithAnswers), as net/http/httptrace hooks do: the
// RoundTripper still returns one response or one error.
//
// A nemesis (KindNemesis) is declared as a Spec too, but it touches no
// attempt: NewNemeses validates it and seeds when its windows open (at a
// share of the load, then every so often), and package trial runs its
// commands beside the load.
//
// A fault that is applied has not necessarily bitten: a timeout the answer
// beat changed nothing. Each fault says in the Answers whether it changed
// what happened (Answers.Bit); the runner records it as Attempt.Bit. A
// timeout's deadline may be relative to the target's latency (Relative:
// after: 0.5x), resolved by a calibration before the load (Spec.Resolve);
// New refuses one not resolved yet (ErrUnresolved). The copies of a
// duplicate are synchronised on their last byte over the runner's
// HTTP/1.1 client (internal/h1's Gate), released by a barrier over any
// other transport (Answers.Spread says which).
//
// Injected network failures are returned as (nil, err) with err wrapping
// ErrDroppedAck, ErrTimeout or ErrReset; Sent tells whether a failed request
// may have reached the server (outcome "info") or certainly did not ("fail").
package faults
