package yamlstrict

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

type retry struct {
	Attempts int     `yaml:"attempts"`
	Backoff  backoff `yaml:"backoff"`
	On       []string
}

type backoff struct {
	Initial  word    `yaml:"initial"`
	Jitter   float64 `yaml:"jitter"`
	Disabled bool    `yaml:"disabled"`
}

type Common struct {
	Name string `yaml:"name"`
}

type config struct {
	Common  `yaml:",inline"`
	Deep    [][][][][][][][]string `yaml:"deep"`
	Retry   *retry                 `yaml:"retry"`
	Headers map[string]string      `yaml:"headers"`
	Body    string                 `yaml:"body"`
	Skip    string                 `yaml:"-"`
}

// word is a value that decodes itself and rejects anything but lower case.
type word string

type hintErr struct{ msg, hint string }

func (e *hintErr) Error() string   { return e.msg + " (hint: " + e.hint + ")" }
func (e *hintErr) Message() string { return e.msg }
func (e *hintErr) Hint() string    { return e.hint }

func (w *word) UnmarshalYAML(n *yaml.Node) error {
	if strings.ToLower(n.Value) != n.Value {
		return &hintErr{msg: "not lower case", hint: "write " + strings.ToLower(n.Value)}
	}
	*w = word(n.Value)
	return nil
}

var opts = Options{
	Noun:      "config",
	EmptyHint: "write name: x",
	StringHint: func(field string) string {
		if field == "body" {
			return "quote it"
		}
		return ""
	},
}

func TestDecodeValid(t *testing.T) {
	const doc = `name: a
retry:
  attempts: 3
  backoff: {initial: fast, jitter: 0.5}
  on: [fail]
headers:
  X-A: b
`
	var got config
	res := Decode([]byte(doc), &got, opts)
	if len(res.Problems) > 0 || !res.Decoded {
		t.Fatalf("Decode(valid) = %+v, want no problems", res)
	}
	want := config{Common: Common{Name: "a"}, Retry: &retry{Attempts: 3, Backoff: backoff{Initial: "fast", Jitter: 0.5}, On: []string{"fail"}}, Headers: map[string]string{"X-A": "b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decode(valid) (-want +got):\n%s", diff)
	}
	wantLines := map[string]int{"name": 1, "retry": 2, "retry.attempts": 3, "retry.backoff": 4, "retry.backoff.initial": 4, "retry.backoff.jitter": 4, "retry.on": 5, "retry.on[0]": 5, "headers": 6, "headers.X-A": 7}
	if diff := cmp.Diff(wantLines, res.Lines); diff != "" {
		t.Errorf("Decode(valid).Lines (-want +got):\n%s", diff)
	}
}

func TestDecodeProblems(t *testing.T) {
	tests := []struct {
		doc  string
		want []Problem
	}{
		{"", []Problem{{Message: "the config is empty", Hint: "write name: x"}}},
		{"- a\n", []Problem{{Line: 1, Column: 1, Message: "a config is a mapping of fields, got a list"}}},
		{"nmae: a\n", []Problem{{Line: 1, Column: 1, Field: "nmae", Message: `unknown field "nmae"`, Hint: "did you mean name?"}}},
		{"zzzzzz: a\n", []Problem{{Line: 1, Column: 1, Field: "zzzzzz", Message: `unknown field "zzzzzz"`, Hint: "did you mean body? a config takes: body, deep, headers, name, retry"}}},
		{"retry: {retires: 1}\n", []Problem{{Line: 1, Column: 9, Field: "retry.retires", Message: `unknown field "retires" in retry`, Hint: "did you mean attempts? retry takes: attempts, backoff, on"}}},
		{"name: a\nname: b\n", []Problem{{Line: 2, Column: 1, Field: "name", Message: `field "name" appears twice (first at line 1)`, Hint: "keep one"}}},
		{"retry: {attempts: '3'}\n", []Problem{{Line: 1, Column: 19, Field: "retry.attempts", Message: `want a whole number, got the string "3"`, Hint: "write it without quotes: 3"}}},
		{"retry: {backoff: {initial: Fast}}\n", []Problem{{Line: 1, Column: 28, Field: "retry.backoff.initial", Message: "not lower case", Hint: "write fast"}}},
		{"body: {a: 1}\n", []Problem{{Line: 1, Column: 7, Field: "body", Message: "want a string, got a mapping", Hint: "quote it"}}},
		{"retry: 3\n", []Problem{{Line: 1, Column: 8, Field: "retry", Message: "want a mapping, got the number 3", Hint: "the fields of retry are: attempts, backoff, on"}}},
		{"headers: [a]\n", []Problem{{Line: 1, Column: 10, Field: "headers", Message: "want a mapping of names to values, got a list", Hint: "write one `name: value` per line under headers"}}},
		{"name: a\n---\nname: b\n", []Problem{{Line: 2, Column: 1, Message: "more than one YAML document"}}},
		{"name: a\n\tbody: b\n", []Problem{{Line: 2, Message: "malformed YAML: found a tab character that violates indentation", Hint: "indent with spaces, not tabs"}}},
	}
	for _, tt := range tests {
		var c config
		res := Decode([]byte(tt.doc), &c, opts)
		if diff := cmp.Diff(tt.want, res.Problems); diff != "" {
			t.Errorf("Decode(%q) problems (-want +got):\n%s", tt.doc, diff)
		}
	}
}

// TestDecodeDecoders: a Decoder decodes a type that is not an
// Unmarshaler, wherever it is, and its errors are reported as an
// Unmarshaler's, at the value's line.
func TestDecodeDecoders(t *testing.T) {
	type timing struct {
		Wait  time.Duration   `yaml:"wait"`
		Waits []time.Duration `yaml:"waits"`
	}
	o := Options{Decoders: map[reflect.Type]func(*yaml.Node, reflect.Value) error{
		reflect.TypeFor[time.Duration](): func(n *yaml.Node, v reflect.Value) error {
			if !strings.HasSuffix(n.Value, "ms") {
				return &hintErr{msg: "no unit", hint: "write " + n.Value + "ms"}
			}
			d, err := time.ParseDuration(n.Value)
			v.SetInt(int64(d))
			return err
		},
	}}
	var got timing
	res := Decode([]byte("wait: 5ms\nwaits: [1ms, 2]\n"), &got, o)
	if want := (timing{Wait: 5 * time.Millisecond, Waits: []time.Duration{time.Millisecond, 0}}); !cmp.Equal(got, want) {
		t.Errorf("Decode(durations) = %+v, want %+v", got, want)
	}
	want := []Problem{{Line: 2, Column: 14, Field: "waits[1]", Message: "no unit", Hint: "write 2ms"}}
	if diff := cmp.Diff(want, res.Problems); diff != "" {
		t.Errorf("Decode(durations) problems (-want +got):\n%s", diff)
	}
}

func TestDecodeFailed(t *testing.T) {
	var c config
	res := Decode([]byte("retry: {attempts: x}\n"), &c, opts)
	for field, want := range map[string]bool{"retry.attempts": true, "retry.attempts.x": true, "retry": false, "retry.on": false, "name": false} {
		if got := res.Failed(field); got != want {
			t.Errorf("Failed(%q) = %v, want %v", field, got, want)
		}
	}
}

func TestDecodeMergeAndBudget(t *testing.T) {
	var c config
	res := Decode([]byte("base: &b {attempts: 2, on: [fail]}\n"), &c, opts)
	if len(res.Problems) != 1 {
		t.Errorf("Decode(unknown base) = %v, want one problem", res.Problems)
	}
	c = config{}
	res = Decode([]byte("retry:\n  <<: &b {attempts: 2, on: [fail]}\n  attempts: 4\n"), &c, opts)
	if len(res.Problems) > 0 || c.Retry.Attempts != 4 || len(c.Retry.On) != 1 {
		t.Errorf("Decode(merge) = %+v, %v; want attempts 4 from the key, on from the merge", c.Retry, res.Problems)
	}
	var bomb strings.Builder
	bomb.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 8; i++ {
		prev := fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&bomb, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(prev+", ", 10), ", "))
	}
	bomb.WriteString("deep: *a7\n")
	c = config{}
	res = Decode([]byte(bomb.String()), &c, Options{MaxNodes: 1000})
	n := 0
	for _, p := range res.Problems {
		if strings.Contains(p.Message, "too large") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("Decode(alias bomb) = %d 'too large' problems, want 1", n)
	}
}

func TestDecodeNotAStruct(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Decode(non-pointer) did not panic")
		}
	}()
	Decode([]byte("a: 1"), config{}, opts)
}

func TestFields(t *testing.T) {
	want := []string{"body", "deep", "headers", "name", "retry"}
	if diff := cmp.Diff(want, Fields(reflect.TypeFor[*config]())); diff != "" {
		t.Errorf("Fields(config) (-want +got):\n%s", diff)
	}
}

// FuzzDecode: Decode never panics, is deterministic, and every problem it
// reports has a message and a location within the input. Seeded from the
// built-in scenarios, the largest documents the project ships.
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "..", "scenarios", "builtin", "*.yaml"))
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("retry: {<<: [{attempts: 1}, {on: [a]}]}\n"))
	f.Add([]byte("a: &a {b: *a}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var a, b config
		ra := Decode(data, &a, opts)
		rb := Decode(data, &b, opts)
		if diff := cmp.Diff(ra.Problems, rb.Problems); diff != "" {
			t.Fatalf("Decode is not deterministic (-first +second):\n%s", diff)
		}
		// YAML breaks lines at LF, CR, CRLF, NEL, LS and PS, counted in
		// the text the parser reads: UTF-16 when the input starts with its
		// byte order mark.
		text := strings.ReplaceAll(yamlText(data), "\r\n", "\n")
		lines := 1
		for _, brk := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
			lines += strings.Count(text, brk)
		}
		for _, p := range ra.Problems {
			if p.Message == "" || p.Line < 0 || p.Line > lines+1 || p.Column < 0 {
				t.Fatalf("Decode problem %+v: want a message and a line within 0..%d", p, lines+1)
			}
		}
		if !ra.Decoded && len(ra.Problems) == 0 {
			t.Fatal("Decode did not decode and reported no problem")
		}
	})
}

// yamlText is data as the YAML reader decodes it: UTF-16 (little or big
// endian) after its byte order mark, UTF-8 otherwise.
func yamlText(data []byte) string {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		order = binary.LittleEndian
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		order = binary.BigEndian
	default:
		return string(data)
	}
	data = data[2:]
	units := make([]uint16, 0, len(data)/2)
	for i := 0; i+1 < len(data); i += 2 {
		units = append(units, order.Uint16(data[i:]))
	}
	return string(utf16.Decode(units))
}
