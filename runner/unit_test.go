package runner

import (
	"hash/fnv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/theory/jsonpath"

	"github.com/idemcheck/idemcheck/history"
)

func TestPacer(t *testing.T) {
	tests := []struct {
		rate    float64
		elapsed time.Duration
		hits    int
		want    time.Duration
	}{
		{rate: 100, elapsed: 0, hits: 0, want: 0},
		{rate: 100, elapsed: 0, hits: 1, want: 10 * time.Millisecond},
		{rate: 100, elapsed: 4 * time.Millisecond, hits: 1, want: 6 * time.Millisecond},
		{rate: 100, elapsed: 10 * time.Millisecond, hits: 1, want: 0},
		{rate: 100, elapsed: time.Second, hits: 50, want: 0}, // behind: catch up at once
		{rate: 100, elapsed: time.Second, hits: 100, want: 0},
		{rate: 100, elapsed: time.Second, hits: 101, want: 10 * time.Millisecond},
		{rate: 0.5, elapsed: time.Second, hits: 1, want: time.Second},
		{rate: 30000, elapsed: 0, hits: 3, want: 100 * time.Microsecond},
	}
	for _, tt := range tests {
		p := Pacer{Rate: tt.rate}
		if got := p.Pace(tt.elapsed, tt.hits); got != tt.want {
			t.Errorf("Pacer{%v}.Pace(%v, %d) = %v, want %v", tt.rate, tt.elapsed, tt.hits, got, tt.want)
		}
	}
	// Over a simulated second, a pacer that is obeyed issues Rate ops.
	p := Pacer{Rate: 250}
	hits := 0
	for el := time.Duration(0); el < time.Second; {
		if w := p.Pace(el, hits); w > 0 {
			el += w
			continue
		}
		hits++
	}
	if hits != 250 {
		t.Errorf("obeying Pacer{250} for 1s issued %d ops, want 250", hits)
	}
}

func TestBackoff(t *testing.T) {
	b := backoff{initial: 10 * time.Millisecond, max: 50 * time.Millisecond, multiplier: 2, seed: 1}
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, b.wait(0, n))
	}
	want := []time.Duration{10, 20, 40, 50, 50}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoff without jitter mismatch (-want +got):\n%s", diff)
	}
	b.jitter = 0.5
	varies := false
	for op := range 50 {
		d := b.wait(op, 2)
		if d < 10*time.Millisecond || d > 20*time.Millisecond {
			t.Errorf("wait(%d, 2) with jitter 0.5 = %v, want in [10ms, 20ms]", op, d)
		}
		if d != b.wait(op, 2) {
			t.Errorf("wait(%d, 2) is not deterministic", op)
		}
		if d != b.wait(0, 2) {
			varies = true
		}
	}
	if !varies {
		t.Errorf("jitter does not vary with the op")
	}
}

func TestNormalize(t *testing.T) {
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
			fa, fb := Normalize([]byte(tt.a), tt.volatile), Normalize([]byte(tt.b), tt.volatile)
			if (fa == fb) != tt.same {
				t.Errorf("Normalize(%q) = %x, Normalize(%q) = %x, want same = %v", tt.a, fa, tt.b, fb, tt.same)
			}
		})
	}
	if got := Normalize(nil, nil); got != 0 {
		t.Errorf("Normalize(nil) = %x, want 0", got)
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
	}
	for _, tt := range tests {
		var c canon
		if !c.canonical([]byte(tt.in)) {
			t.Errorf("canonical(%q) = not JSON, want %s", tt.in, tt.want)
			continue
		}
		if got := string(c.out); got != tt.want {
			t.Errorf("canonical(%q) = %s, want %s", tt.in, got, tt.want)
		}
		// The decoded path writes the same form.
		doc, ok := decodeJSON([]byte(tt.in))
		if !ok {
			t.Fatalf("decodeJSON(%q) failed", tt.in)
		}
		c.reset()
		c.encode(doc)
		if got := string(c.out); got != tt.want {
			t.Errorf("encode(decode(%q)) = %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `[1,]`, `01`, `1.`, `-`, `tru`, `"a`, "\"\x01\"", `{"a":1}x`, `{"a":1,}`} {
		var c canon
		if c.canonical([]byte(bad)) {
			t.Errorf("canonical(%q) = JSON %s, want not JSON", bad, c.out)
		}
	}
}

func TestMerge(t *testing.T) {
	var a, b recorder
	for i := range 3000 {
		r := &a
		if i%3 == 0 {
			r = &b
		}
		r.ops.add(history.Op{ID: i, Key: "k"})
		for n := 1; n <= i%3+1; n++ {
			r.attempts.add(history.Attempt{Op: i, N: n})
		}
	}
	ops, attempts := merge([]*recorder{&a, nil, &b})
	if len(ops) != 3000 || len(attempts) != 6000 {
		t.Fatalf("merge: %d ops %d attempts, want 3000 and 6000", len(ops), len(attempts))
	}
	for i, op := range ops {
		if op.ID != i || op.Key != "k" {
			t.Errorf("ops[%d] = %+v", i, op)
		}
	}
	j := 0
	for i := range 3000 {
		for n := 1; n <= i%3+1; n++ {
			if a := attempts[j]; a.Op != i || a.N != n {
				t.Fatalf("attempts[%d] = op %d n %d, want op %d n %d", j, a.Op, a.N, i, n)
			}
			j++
		}
	}
}

// fnv1a must stay the standard 64-bit FNV-1a: keySeed hashes the scenario
// name with it, and the same seed must keep giving the same keys.
func TestFNV1a(t *testing.T) {
	for _, in := range []string{"", "a", "charges-naive", "posts/like \x00\xff"} {
		h := fnv.New64a()
		h.Write([]byte(in))
		if got, want := fnv1a([]byte(in)), h.Sum64(); got != want {
			t.Errorf("fnv1a(%q) = %x, want %x", in, got, want)
		}
	}
}
