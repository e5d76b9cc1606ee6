package canon

import (
	"encoding/json"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/theory/jsonpath"
)

func TestFingerprint(t *testing.T) {
	base := `{"id":"ch_1","amount":100,"created":"2024-01-01T00:00:00Z","tags":["a","b"],"meta":{"x":1,"y":null}}`
	volatile := []*jsonpath.Path{jsonpath.MustParse("$.created"), jsonpath.MustParse("$.meta.y")}
	tests := []struct {
		name     string
		a, b     string
		volatile []*jsonpath.Path
		same     bool
	}{
		{"identical", base, base, nil, true},
		{"key order", base, `{"meta":{"y":null,"x":1},"tags":["a","b"],"created":"2024-01-01T00:00:00Z","amount":100,"id":"ch_1"}`, nil, true},
		{"whitespace", base, "\n{ \"id\" : \"ch_1\",\t\"amount\": 100, \"created\":\"2024-01-01T00:00:00Z\", \"tags\": [ \"a\" , \"b\" ], \"meta\": {\"x\": 1, \"y\": null} }\n", nil, true},
		{"escapes", `{"s":"é/<"}`, `{"s":"\u00e9\/\u003c"}`, nil, true},
		{"volatile ignored", base, `{"id":"ch_1","amount":100,"created":"2025-06-06T00:00:00Z","tags":["a","b"],"meta":{"x":1,"y":"req-9"}}`, volatile, true},
		{"volatile, other order", base, `{"meta":{"x":1},"tags":["a","b"],"amount":100,"id":"ch_1"}`, volatile, true},
		{"volatile array element", `{"a":[1,2,3]}`, `{"a":[1,9,3]}`, []*jsonpath.Path{jsonpath.MustParse("$.a[1]")}, true},
		{"volatile wildcard", `{"a":[{"t":1,"v":1},{"t":2,"v":2}]}`, `{"a":[{"t":5,"v":1},{"t":6,"v":2}]}`, []*jsonpath.Path{jsonpath.MustParse("$.a[*].t")}, true},
		{"other value", base, `{"id":"ch_2","amount":100,"created":"2024-01-01T00:00:00Z","tags":["a","b"],"meta":{"x":1,"y":null}}`, volatile, false},
		{"number", `{"amount":100}`, `{"amount":101}`, nil, false},
		{"number form", `{"amount":100}`, `{"amount":100.0}`, nil, false},
		{"type", `{"amount":100}`, `{"amount":"100"}`, nil, false},
		{"array order", `{"tags":["a","b"]}`, `{"tags":["b","a"]}`, nil, false},
		{"extra field", `{"a":1}`, `{"a":1,"b":2}`, nil, false},
		{"non-volatile differs", base, `{"id":"ch_1","amount":100,"created":"2025","tags":["a"],"meta":{"x":1,"y":null}}`, volatile, false},
		{"not JSON, same", "ok\n", "ok\n", nil, true},
		{"not JSON, spacing counts", "ok", "ok ", nil, false},
		{"truncated JSON is raw", `{"a":1`, `{"a": 1`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fa, fb := Fingerprint([]byte(tt.a), tt.volatile), Fingerprint([]byte(tt.b), tt.volatile)
			if (fa == fb) != tt.same {
				t.Errorf("Fingerprint(%q) = %x, Fingerprint(%q) = %x, want same = %v", tt.a, fa, tt.b, fb, tt.same)
			}
		})
	}
	if got := Fingerprint(nil, nil); got != 0 {
		t.Errorf("Fingerprint(nil) = %x, want 0", got)
	}
	if got, want := Fingerprint([]byte("ok"), nil), FNV1a([]byte("ok")); got != want {
		t.Errorf("Fingerprint(%q) = %x, want FNV1a of the body %x", "ok", got, want)
	}
}

func TestCanonicalForm(t *testing.T) {
	tests := []struct{ in, want string }{
		{` { "b" : [ 1 , { "z" : true , "a" : false } ] , "a" : "x\ny" } `, `{"a":"x\ny","b":[1,{"a":false,"z":true}]}`},
		{`"\u0001\"\\"`, `"\u0001\"\\"`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`-1.5e+10`, `-1.5e+10`},
		{`{"é":1,"e":2}`, `{"e":2,"é":1}`},
		{"\"a\xffb\"", "\"a\uFFFDb\""},
	}
	for _, tt := range tests {
		var c Buffer
		got, ok := c.Canonical([]byte(tt.in))
		if !ok {
			t.Errorf("Canonical(%q) = not JSON, want %s", tt.in, tt.want)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Canonical(%q) = %s, want %s", tt.in, got, tt.want)
		}
		// The decoded path writes the same form.
		doc, ok := Decode([]byte(tt.in))
		if !ok {
			t.Fatalf("Decode(%q) failed", tt.in)
		}
		if got := string(c.Encode(doc)); got != tt.want {
			t.Errorf("Encode(Decode(%q)) = %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{``, ` `, `{`, `{"a"}`, `[1,]`, `01`, `1.`, `-`, `tru`, `"a`, "\"\x01\"", `{"a":1}x`, `{"a":1,}`, `1 2`,
		strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)} {
		var c Buffer
		if got, ok := c.Canonical([]byte(bad)); ok {
			t.Errorf("Canonical(%.40q) = JSON %.40s, want not JSON", bad, got)
		}
	}
	deep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	var c Buffer
	if _, ok := c.Canonical([]byte(deep)); !ok {
		t.Errorf("Canonical(%d nested arrays) = not JSON, want JSON", maxDepth)
	}
}

func TestSelect(t *testing.T) {
	doc, ok := Decode([]byte(`{"id":"ch_1","n":1.50,"ok":true,"z":null,"o":{"b":1,"a":2},"l":[{"v":1},{"v":2}]}`))
	if !ok {
		t.Fatal("Decode failed")
	}
	tests := []struct {
		path, want string
		ok         bool
	}{
		{"$.id", "ch_1", true},
		{"$.n", "1.50", true},
		{"$.ok", "true", true},
		{"$.z", "null", true},
		{"$.o", `{"a":2,"b":1}`, true},
		{"$.l[*].v", `[1,2]`, true},
		{"$.missing", "", false},
	}
	var c Buffer
	for _, tt := range tests {
		got, ok := c.Select(jsonpath.MustParse(tt.path), doc)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Select(%s) = %q, %v, want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}

// FNV1a must stay the standard 64-bit FNV-1a: keys are derived from the
// scenario name with it, and the same seed must keep giving the same keys;
// Hash in pieces must give the same value as FNV1a of the whole.
func TestFNV1a(t *testing.T) {
	for _, in := range []string{"", "a", "charges-naive", "posts/like \x00\xff"} {
		h := fnv.New64a()
		h.Write([]byte(in))
		if got, want := FNV1a([]byte(in)), h.Sum64(); got != want {
			t.Errorf("FNV1a(%q) = %x, want %x", in, got, want)
		}
		for i := range len(in) + 1 {
			if got, want := NewHash().Add([]byte(in[:i])).Add([]byte(in[i:])).Sum(), h.Sum64(); got != want {
				t.Errorf("NewHash().Add(%q).Add(%q).Sum() = %x, want %x", in[:i], in[i:], got, want)
			}
		}
	}
}

// FuzzCanonical checks the canonical form against encoding/json: a body is
// accepted exactly when json.Valid accepts it (unless it nests deeper than
// maxDepth), its canonical form decodes to the same value as the body, and
// the canonical form is its own canonical form.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"id":"ch_1","amount":100,"currency":"usd","status":"succeeded","created":"2024-01-01T00:00:00Z"}`,
		` { "b" : [ 1 , { "z" : true , "a" : false } ] , "a" : "x\ny" } `,
		`{"s":"\u00e9\/\u003c\ud800","e":"é","n":-1.5e+10,"z":null,"t":[]}`,
		`{"a":1,"a":2,"\u0061":3}`,
		"\"a\xffb\"",
		`[1,]`, `{"a"}`, `01`, `"\u12"`, `{"a":1}x`, `ok`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var c Buffer
		out, ok := c.Canonical(in)
		if valid := json.Valid(in); ok != valid {
			if valid && !ok && depth(in) > maxDepth {
				return
			}
			t.Fatalf("Canonical(%q) ok = %v, json.Valid = %v", in, ok, valid)
		}
		if !ok {
			if got, want := c.Fingerprint(in, nil), FNV1a(in); len(in) > 0 && got != want {
				t.Fatalf("Fingerprint(%q) = %x, want the raw hash %x", in, got, want)
			}
			return
		}
		out = append([]byte(nil), out...)
		want, err := decode(in)
		if err != nil {
			t.Fatalf("json.Valid(%q) but decoding fails: %v", in, err)
		}
		got, err := decode(out)
		if err != nil {
			t.Fatalf("Canonical(%q) = %q, which encoding/json rejects: %v", in, out, err)
		}
		if !equal(got, want) {
			t.Fatalf("Canonical(%q) = %q decodes to %#v, want %#v", in, out, got, want)
		}
		again, ok := c.Canonical(out)
		if !ok || string(again) != string(out) {
			t.Fatalf("Canonical(Canonical(%q)) = %q, %v, want %q", in, again, ok, out)
		}
	})
}

// decode decodes b with encoding/json, numbers kept as written.
func decode(b []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// equal compares decoded JSON values.
func equal(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			w, ok := bm[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !equal(a[i], bs[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// depth is the deepest nesting of arrays and objects in b, outside strings.
func depth(b []byte) int {
	d, deepest, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch ch := b[i]; {
		case inStr && ch == '\\':
			i++
		case ch == '"':
			inStr = !inStr
		case inStr:
		case ch == '[' || ch == '{':
			d++
			deepest = max(deepest, d)
		case ch == ']' || ch == '}':
			d--
		}
	}
	return deepest
}
