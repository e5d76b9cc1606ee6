// Package cmd is idemcheck's command line: the Cobra tree, flags copied into
// options, calls into the library packages, output, and the one table that
// maps outcomes to exit codes. Nothing below cmd prints or exits.
package cmd
