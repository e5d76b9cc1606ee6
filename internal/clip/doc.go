// Package clip shortens text for a reader: the one place idemcheck cuts
// a line of evidence, an error or a summary to fit a terminal, a table
// or a CI message. It cuts at a word, never in the middle of one (nor
// of a character), and says that it did with "…".
package clip
