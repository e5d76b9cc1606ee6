// Package trial is one run's sequence, shared by every command that runs
// or judges a scenario (run, check, demo, and the audit and bench to come):
//
//	Prepare ──> Load ──> Settle ──> Observe ──> Judge
//	  │          │         │          │           │
//	  │ setup,   │ runner  │ quiet    │ oracles   │ measure + checks:
//	  │ oracles  │ (faults,│ period   │ read      │ verdicts, thresholds,
//	  │ read     │ retries)│          │ after     │ expectation → result
//	  │ before   │         │          │           │
//	  v          v         v          v           v
//	Trial    history   (waits)   history.Readings  Judged
//
// Prepare, Load and Judge are separate steps so that they can run in
// different processes; Run does them all in one. Judge reads nothing but
// the history, which carries what it is judged against: a saved run is
// judged exactly as the live one.
//
// Errors that a caller must tell apart are types or sentinels: a
// configuration problem wraps ErrConfig, a target that could not be
// reached or set up is a *TargetError, an interrupted run wraps
// context.Canceled.
package trial
