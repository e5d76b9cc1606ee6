// Package yamlstrict decodes one YAML document into a Go struct strictly,
// and reports every problem at once, each at its line and column.
//
// It is what yaml.v3's KnownFields(true) does, made kind to the person who
// wrote the file: decoding goes on past the first problem, an unknown field
// gets a "did you mean" hint, a duplicate key names the line of the first,
// and the line of every field given a value is recorded so that later
// validation can point at it too.
//
//	data ──yaml.v3──▶ *yaml.Node ──walk (reflect, yaml tags)──▶ v
//	                                   │
//	                                   ├──▶ Result.Lines    "retry.attempts" → 12
//	                                   └──▶ Result.Problems line:col, field, message, hint
//
// Fields are found by their yaml tags (",inline" is followed); a type that
// implements yaml.Unmarshaler decodes itself, and may return an error with
// a hint (see Hinter). Aliases and merge keys (<<) are expanded within a
// budget, so a "billion laughs" document is one problem, not a hang.
package yamlstrict
