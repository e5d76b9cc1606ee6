// Package trial is one run's sequence, shared by every command that runs
// or judges a scenario (run, its sharded phases and report merge, check,
// demo; audit and bench drive the runner themselves, with their own
// probes and loads):
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
// different processes; Run does them all in one. Load runs the scenario's
// nemesis beside the load, if it declares one (nemesis.go: the user's
// commands, run only in the process that read the scenario, so a
// shard's load refuses one with ErrNemesisSharded; Strike runs one window
// for a caller with a schedule of its own). Judge reads nothing but
// the history, which carries what it is judged against: a saved run is
// judged exactly as the live one.
//
// A run made by several processes shares a directory (dir.go): prepare
// publishes the run there (Publish: the oracles' readings, then the
// manifest), each load process claims its shard (ClaimShard), makes it
// (LoadShard) and writes its history (Claim.Write); the judge reads the
// run back (ReadRun, Resume), waits for the shards (CollectShards) and
// judges them merged (JudgeShards). A judged run is saved to a directory
// of its own (Save: history.jsonl, report.json, report.html), one per
// scenario when a command runs several (RunDirs).
//
// Errors that a caller must tell apart are types or sentinels: a
// configuration problem wraps ErrConfig, a target that could not be
// reached or set up is a *TargetError, an interrupted run wraps
// context.Canceled; a run's directory has its own (ErrRunExists,
// ErrNoManifest, ErrManifest, ErrNoReadings, ErrTargetSecret,
// ErrScenarioTarget, *ClaimError, ErrShardFile, ErrShardTwice,
// ErrNoShards), and so has an authenticated one (mac.go: ErrTampered,
// ErrRunKey).
package trial
