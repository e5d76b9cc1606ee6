// Package reports turns a checked run into what people and machines read:
// one Summary value, built from the history, the observations and the
// verdicts, and writers chosen by name (text, json, markdown, junit) that
// render it. Reporters never decide exit codes.
//
//	history + observations + verdicts --Build--> Summary --Writer(name)--> io.Writer
package reports
