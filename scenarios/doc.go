// Package scenarios is the scenario model: the YAML schema, strict loading
// with every problem reported at once with its line, defaults, validation,
// request templating, and the built-in scenarios embedded in the binary.
package scenarios
