package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWords(t *testing.T) {
	const timeout = "injected timeout: no answer within 10ms; the client gave up, the server may still be working"
	cases := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{timeout, 80, "injected timeout: no answer within 10ms; the client gave up, the server may…"},
		{timeout, 63, "injected timeout: no answer within 10ms; the client gave up…"},
		{"two words", 3, "two…"}, // the cut falls right before a space
		// one long word: cut inside it, bounded
		{"aaaaaaaaaaaaaaaaaaaa", 8, "aaaaaaaa…"},
		// a short first word and a long second one: a word boundary that
		// would leave too little of n is not taken
		{"a bbbbbbbbbbbbbbbbbbbb", 10, "a bbbbbbbb…"},
		// runes, not bytes
		{"déjà vu déjà vu", 9, "déjà vu…"},
		{"ééééééééé", 4, "éééé…"},
		{"x", 0, "x"},
		{"xy", 0, "x…"},
	}
	for _, c := range cases {
		if got := Words(c.s, c.n); got != c.want {
			t.Errorf("Words(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// FuzzWords: the result is valid UTF-8, s itself when it fits, else a
// prefix of s (at most n characters) and the ellipsis.
func FuzzWords(f *testing.F) {
	f.Add("injected timeout: the client gave up, the server may still be working", 40)
	f.Add("ééé ééé", 2)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if !utf8.ValidString(s) || n > 1000 || n < -10 {
			return
		}
		got := Words(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("Words(%q, %d) = %q: not UTF-8", s, n, got)
		}
		if utf8.RuneCountInString(s) <= max(n, 1) {
			if got != s {
				t.Fatalf("Words(%q, %d) = %q, want s unchanged", s, n, got)
			}
			return
		}
		head, ok := strings.CutSuffix(got, Ellipsis)
		if !ok || !strings.HasPrefix(s, head) || utf8.RuneCountInString(head) > max(n, 1) {
			t.Fatalf("Words(%q, %d) = %q, want a prefix of at most %d characters and %q", s, n, got, max(n, 1), Ellipsis)
		}
	})
}
