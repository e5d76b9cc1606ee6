// Package history holds what a run did and what it is judged against: its
// logical operations, every HTTP attempt made for them with every answer
// received (the copies of a duplicate send, an answer a fault hid), the
// oracles' readings of the target's state, and the expectation, invariants
// and thresholds of the scenario. A saved history (history.jsonl, format 3,
// see docs/history.md) is all that `idemcheck check` needs.
//
// It is the leaf that every other package shares and imports only the
// standard library.
//
//	runner --records--> History <--readings-- oracles
//	                       |  \
//	                       |   +--saved as--> history.jsonl (header, ops, attempts, readings, end)
//	                       v
//	            measure (counts, latency), checks (verdicts, result), reports (render)
package history
