// Package hint is the one error type that carries, beside what is wrong,
// what to write instead: the libraries' errors about a flag or an
// argument. The CLI prints the hint of any error with a Hint method.
package hint
