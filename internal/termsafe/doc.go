// Package termsafe keeps what a target, a scenario or a saved history says
// from steering the terminal that shows it.
//
// A value decoded from an answer can hold ESC sequences (clear the screen,
// set the window title with OSC 0, hide a link with OSC 8, move the
// cursor), a CR that sends the cursor back so that a FAIL line is
// overwritten to read PASS, NUL, other C0 and C1 controls, DEL, bidi
// controls that reorder what is shown (U+202A–U+202E, U+2066–U+2069,
// U+200E, U+200F, U+061C) and line or paragraph separators (U+2028,
// U+2029). String shows each of them escaped, as Go writes it in a
// literal (\x1b, \r, \u202e), and leaves every other rune, the backslash
// included, as it is: ordinary text is untouched, and a value already
// escaped is escaped no further.
//
// A tab or a newline inside a value is escaped as well (\t, \n): a tab
// would shift the columns of a table (the audit's scorecard), a newline
// would add a line the renderer did not write. The renderer's own tabs
// and newlines, in its format strings, are written as they are. Lines
// keeps a value's newlines, for messages the tool builds of several
// lines (errors joined, diagnostics).
//
// Fprintf and Sprintf are fmt's, with every string and error argument
// (named string types included) passed through String first: a renderer
// that prints through them cannot forget a field. JSON, JUnit and HTML
// outputs need none of this: their encoders escape.
package termsafe
