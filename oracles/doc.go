// Package oracles reads the real state of a target: effects per key, a
// counter, an account. Each Oracle takes a reading before the load (where
// it compares before and after) and one after it, and returns a
// history.Reading that the checkers judge.
//
//	scenario oracles ──> FromScenarioTargets ──> []Oracle
//	                                               │ Before(ctx)      before the load
//	                                               │ Observe(ctx, h)  after the quiet period
//	                                               v
//	                                         history.Reading ──> checks
//
// Sources: HTTP (a GET per key or one bulk GET, values selected with RFC
// 9535 JSONPath), SQL on Postgres (pgx), and Redis (go-redis). Errors never
// carry a request header, a password or a secret query parameter.
package oracles
