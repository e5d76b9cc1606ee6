// Package history holds what a run did: its logical operations, every HTTP
// attempt made for them, and their outcomes, with a JSON Lines codec so a run
// can be saved and checked again offline.
//
// It is the leaf that every other package shares and imports only the
// standard library.
//
//	runner --records--> History --saved as--> history.jsonl
//	                       |
//	                       +--> checks (invariants), reports (latency, evidence)
package history
