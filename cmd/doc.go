// Package cmd is idemcheck's command line: the Cobra tree, flags copied into
// options, calls into the library packages, output, and the one table that
// maps outcomes to exit codes. Nothing below cmd prints or exits.
//
// A command that sends or judges takes one of three paths:
//
//	run, demo, run --phase   trial    prepare, load, read, judge: one run of a scenario
//	check                    trial    judges a run directory again, sends nothing
//	bench overhead           abtest   A/B blocks of two scenarios, sent by runner directly
//	demo (its cost table)    abtest   the same A/B, protected against naive
//	audit                    audit    its probes, in its own order; no trial
//
// The scenario of a request given on the command line (audit, bench
// overhead) is built by scenarios.FromRequest, the file init writes by
// scenarios.StarterYAML; what bench and demo print is rendered by reports,
// the audit's scorecard by audit.
package cmd
