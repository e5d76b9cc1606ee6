package termsafe

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// attacks are the strings a hostile target or scenario sends to a
// terminal, each with what String must show in its place.
var attacks = []struct{ name, in, want string }{
	{"clear screen", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
	{"OSC 0 window title", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
	{"OSC 8 link", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", `\x1b]8;;https://evil.example/\x1b\click\x1b]8;;\x1b\`},
	{"cursor up", "\x1b[1A\x1b[2K", `\x1b[1A\x1b[2K`},
	{"CR overwrite", "FAIL\rPASS", `FAIL\rPASS`},
	{"CRLF", "a\r\nb", `a\r\nb`},
	{"NUL", "a\x00b", `a\x00b`},
	{"BEL and BS", "a\x07\x08b", `a\x07\x08b`},
	{"DEL", "a\x7fb", `a\x7fb`},
	{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
	{"NEL", "a\u0085b", `a\u0085b`},
	{"raw 0x9b byte", "a\x9b2Jb", `a\x9b2Jb`},
	{"tab", "a\tb", `a\tb`},
	{"newline", "a\nPASS", `a\nPASS`},
	{"RLO", "FAIL \u202eSSAP", `FAIL \u202eSSAP`},
	{"LRE PDF", "\u202aa\u202c", `\u202aa\u202c`},
	{"isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`},
	{"marks", "\u200ea\u200fb\u061c", `\u200ea\u200fb\u061c`},
	{"line separator", "a\u2028b", `a\u2028b`},
	{"paragraph separator", "a\u2029b", `a\u2029b`},
}

func TestStringEscapesEveryAttack(t *testing.T) {
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			got := String(a.in)
			if got != a.want {
				t.Errorf("String(%q) = %q, want %q", a.in, got, a.want)
			}
			if r, ok := unsafeRune(got); ok {
				t.Errorf("String(%q) = %q still holds %U", a.in, got, r)
			}
			if again := String(got); again != got {
				t.Errorf("escaping again changed %q to %q", got, again)
			}
		})
	}
}

func TestStringKeepsOrdinaryText(t *testing.T) {
	for _, s := range []string{"", "charge ch_123 amount=1000", `C:\path\x1b`, "naïve café ✅ ❌ ⚠️ 日本語", "emoji 👍🏽", "a\\nb", "Ω ≠ ∞"} {
		if got := String(s); got != s {
			t.Errorf("String(%q) = %q, want it unchanged", s, got)
		}
	}
}

func TestLinesKeepsNewlinesOnly(t *testing.T) {
	got := Lines("first\nsecond\r\nFAIL\rPASS\x1b[2J\u202e")
	want := "first\nsecond\\r\nFAIL\\rPASS\\x1b[2J\\u202e"
	if got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}

type status string

type word string

func (w word) String() string { return "word:" + string(w) }

func TestFprintfEscapesArgumentsNotFormat(t *testing.T) {
	var b bytes.Buffer
	Fprintf(&b, "%-6s %s\t%v %d %s %s\n", status("FAIL\r"), "key\x1b]0;t\x07", errors.New("boom\nPASS"), 42, word("\u202e"), []byte("raw"))
	want := "FAIL\\r %s\t%s 42 %s raw\n"
	want = strings.Replace(want, "%s", `key\x1b]0;t\x07`, 1)
	want = strings.Replace(want, "%s", `boom\nPASS`, 1)
	want = strings.Replace(want, "%s", `word:\u202e`, 1)
	if b.String() != want {
		t.Errorf("Fprintf wrote %q, want %q", b.String(), want)
	}
	if s := Sprintf("%s|%s", "a\rb", "c"); s != `a\rb|c` {
		t.Errorf("Sprintf = %q", s)
	}
}

// unsafeRune is the first rune a terminal must not receive raw, by an
// oracle written apart from Unsafe: Unicode's controls, the bidi controls
// and separators named in the issue, and bytes that are not UTF-8.
func unsafeRune(s string) (rune, bool) {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return r, true
			}
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029' {
			return r, true
		}
	}
	return 0, false
}

func FuzzString(f *testing.F) {
	for _, a := range attacks {
		f.Add(a.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if r, ok := unsafeRune(got); ok {
			t.Fatalf("String(%q) = %q holds %U", s, got, r)
		}
		if String(got) != got {
			t.Fatalf("String is not idempotent on %q", s)
		}
	})
}
