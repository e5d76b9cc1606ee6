// Package audit runs the contract checks of docs/audit.md (C01–C18 and the
// distinct-keys probe) against one endpoint and returns a scorecard: for
// each check its severity, its result (pass, fail, unknown or skipped) with
// the reason, and the evidence (the requests sent, secrets redacted, the
// answers and the effect counts).
//
//	Config ──New──▶ Auditor ──Plan──▶ []Planned              (--dry-run)
//	                   │
//	                   └──Run──▶ calibrate: 2 requests, both 2xx; the
//	                               │         oracle counts 1 effect each
//	                               ▼
//	                         C01 … C18, DK   fresh UUID v4 keys, bounded
//	                               │         requests, several rounds;
//	                               │         barrier for concurrent copies;
//	                               │         faults (drop_ack, timeout,
//	                               │         reset) from package faults
//	                               ▼
//	                         effects oracle (optional): E(k) per key
//	                               ▼
//	                           Scorecard ──Write(format)──▶ io.Writer
//
// A check judges from the effects oracle when there is one, and from the
// answers alone when there is none, and says which: two 2xx answers to
// copies of one key that name different resources (a different "id", or
// Location, or body) are two executions whatever the oracle; where the
// answers cannot tell, the result is unknown, never a guess.
//
// The package sends real requests through the http.RoundTripper it is
// given and never prints: Write renders a Scorecard to a writer the caller
// owns.
package audit
