package termsafe

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// String is s with every control character (C0, DEL, C1, tab and newline
// included), bidi control, line and paragraph separator, and every byte
// that is not UTF-8, escaped visibly: \t, \n, \r, \x1b, \x7f, \u0085,
// \u202e, \u2028, \xff. Anything else is kept as it is; s is returned
// unchanged when it holds nothing to escape.
func String(s string) string { return escape(s, false) }

// Lines is String keeping s's newlines: for a message of several lines
// the tool built itself. A CR, even before a newline, is still escaped.
func Lines(s string) string { return escape(s, true) }

// Unsafe reports whether r is escaped by String.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true // C0, DEL, C1
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x200e, r == 0x200f, r == 0x061c:
		return true // bidi controls
	case r == 0x2028, r == 0x2029:
		return true // line and paragraph separators
	}
	return false
}

func escape(s string, keepNewlines bool) string {
	i := firstUnsafe(s, keepNewlines)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && keepNewlines:
			b.WriteByte('\n')
		case !Unsafe(r):
			b.WriteString(s[i : i+n])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// firstUnsafe is the index of the first byte String would change, -1
// when there is none.
func firstUnsafe(s string, keepNewlines bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || Unsafe(r) && !(r == '\n' && keepNewlines) {
			return i
		}
		i += n
	}
	return -1
}

// Fprintf is fmt.Fprintf with every string and error argument passed
// through String: the format's own text (its newlines and tabs) is
// written as it is, what the arguments hold is escaped.
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	return fmt.Fprintf(w, format, Args(args)...)
}

// Sprintf is fmt.Sprintf with every string and error argument passed
// through String.
func Sprintf(format string, args ...any) string {
	return fmt.Sprintf(format, Args(args)...)
}

// Args is args with each string (of any string type, through its String
// method when it has one) and error replaced by its text through String;
// the other values (numbers, durations) are kept. args is not changed.
// Meant for %s and %v: a %q of an escaped value would double its
// backslashes.
func Args(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = String(v)
		case error:
			out[i] = String(v.Error())
		default:
			out[i] = a
			if rv := reflect.ValueOf(a); rv.Kind() == reflect.String {
				if st, ok := a.(fmt.Stringer); ok {
					out[i] = String(st.String())
				} else {
					out[i] = String(rv.String())
				}
			}
		}
	}
	return out
}
