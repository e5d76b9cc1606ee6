package clip

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis ends a text that Words shortened.
const Ellipsis = "…"

// Words returns s when it has at most n characters (runes), else its
// first words that fit in n characters followed by Ellipsis: it cuts at
// the last space within the first n characters, dropping the space and
// any comma, colon or semicolon before it. A word longer than half of n
// that would leave too little is cut inside, at n characters, so the
// result never exceeds n characters plus the ellipsis. n below 1 is 1.
func Words(s string, n int) string {
	n = max(n, 1)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	end := len(s) // the byte after the n-th rune
	for i := range s {
		if n == 0 {
			end = i
			break
		}
		n--
	}
	head := s[:end]
	// a space right after the cut: the cut falls between two words
	if r, _ := utf8.DecodeRuneInString(s[end:]); unicode.IsSpace(r) {
		return trimEnd(head) + Ellipsis
	}
	if i := strings.LastIndexFunc(head, unicode.IsSpace); i > 0 && utf8.RuneCountInString(head[:i]) >= utf8.RuneCountInString(head)/2 {
		if t := trimEnd(head[:i]); t != "" {
			return t + Ellipsis
		}
	}
	return head + Ellipsis
}

// trimEnd drops the spaces and the punctuation that would dangle before
// an ellipsis.
func trimEnd(s string) string {
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(",;:", r) })
}
