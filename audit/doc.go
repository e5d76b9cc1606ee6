// Package audit runs the contract checks of docs/audit.md (C01–C18, the
// distinct-keys probe and C24–C28) against one endpoint and returns a
// scorecard: for each check its severity, its result (pass, fail, unknown
// or skipped) with the reason, and the evidence (the requests sent,
// secrets redacted, the answers and the effect counts).
//
//	Config ──New──▶ Auditor ──Plan──▶ []Planned              (--dry-run)
//	                   │
//	                   └──Run──▶ calibrate: 2 requests, both 2xx; the
//	                               │         oracle counts 1 effect each
//	                               ▼
//	                   C01 … C18, DK, C24 … C28   fresh UUID v4 keys, bounded
//	                               │         requests, several rounds (C06:
//	                               │         more while a round is
//	                               │         inconclusive or near a race);
//	                               │         barrier for concurrent copies;
//	                               │         faults (drop_ack, timeout,
//	                               │         reset) from package faults
//	                               ▼
//	                         effects oracle (optional): E(k) per key
//	                               ▼
//	                   history ──checks.JudgeContract──▶ Scorecard
//
// A check judges from the effects oracle when there is one, and from the
// answers alone when there is none, and says which: two 2xx answers to
// copies of one key that name different resources (a different "id", or
// Location, or body) are two executions whatever the oracle; where the
// answers cannot tell, the result is unknown, never a guess.
//
// Where the API mints the keys (Config.KeyFromAnswer), each op's first
// request carries no key and its later ones the key its answer gave; the
// checks that need a key the client chooses, or a key before the first
// answer, are skipped.
//
// The package sends real requests through the http.RoundTripper it is
// given and never prints: the caller renders the Scorecard.
package audit
