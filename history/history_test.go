package history

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func sample() *History {
	h := &History{
		Meta: Meta{RunID: "r1", Scenario: "s", Target: "http://127.0.0.1:1", Seed: 42, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Judge: Judge{Expect: "pass", Invariants: []Invariant{{Check: "exactly_once", Oracle: "ledger"}},
				Thresholds: Thresholds{P99: 5 * time.Millisecond, ErrorRate: ptr(0.5)}}},
		Ops: []Op{{ID: 0, Key: "k0", User: "alice"}, {ID: 1, Key: "k1"}, {ID: 2, Key: "k2"}},
		Attempts: []Attempt{
			{Op: 1, N: 2, Outcome: OK, Status: 201, Intended: 5, Start: 6, End: 9, Fingerprint: 0xabc, Fields: map[string]string{"id": "ch_1"}},
			{Op: 0, N: 1, Fault: "drop_ack", Outcome: Info, Intended: 1, Start: 1, End: 3, Err: "dropped"},
			{Op: 1, N: 1, Fault: "reset", Outcome: Fail, Intended: 2, Start: 2, End: 2},
			{Op: 0, N: 2, Outcome: OK, Status: 201, Intended: 4, Start: 4, End: 8, Fingerprint: 1, Copies: 2,
				Answers: []Answer{{Copy: 2, Outcome: OK, Status: 409, End: 9}}},
		},
		Readings: []Reading{{Oracle: "ledger", Kind: KindEffects, Effects: map[string]int{"k0": 1}}},
	}
	h.Sort()
	return h
}

func ptr[T any](v T) *T { return &v }

func encoded(t *testing.T, h *History) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, h); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// A history cut anywhere before its trailer is refused as incomplete,
// never judged on part of the run.
func TestDecodeTruncated(t *testing.T) {
	full := encoded(t, sample())
	lines := strings.SplitAfter(strings.TrimSuffix(full, "\n"), "\n")
	for n := 1; n < len(lines); n++ {
		cut := strings.Join(lines[:n], "")
		_, err := Decode(strings.NewReader(cut))
		if !errors.Is(err, ErrTruncated) || !errors.Is(err, ErrFormat) {
			t.Errorf("Decode(first %d of %d lines) = %v, want ErrTruncated", n, len(lines), err)
		}
	}
	// A trailer that counts otherwise than what precedes it: lines lost
	// in the middle.
	dropped := strings.Join(append(append([]string{}, lines[:2]...), lines[3:]...), "")
	if _, err := Decode(strings.NewReader(dropped)); !errors.Is(err, ErrFormat) || errors.Is(err, ErrTruncated) {
		t.Errorf("Decode(a line dropped) = %v, want ErrFormat (counts differ)", err)
	}
	if _, err := Decode(strings.NewReader(full + full)); !errors.Is(err, ErrFormat) {
		t.Errorf("Decode(two histories) = %v, want ErrFormat", err)
	}
}

func TestDecodeOldFormat(t *testing.T) {
	_, err := Decode(strings.NewReader(`{"type":"header","format_version":1,"scenario":"s"}` + "\n"))
	if !errors.Is(err, ErrOldFormat) {
		t.Errorf("Decode(v1) = %v, want ErrOldFormat", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encoded(&testing.T{}, sample()))
	f.Add(`{"type":"header","format_version":2}` + "\n" + `{"type":"end","ops":0,"attempts":0,"readings":0}`)
	f.Add("{\"type\":\"attempt\",")
	f.Fuzz(func(t *testing.T, in string) {
		h, err := Decode(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrFormat) && !strings.HasPrefix(err.Error(), "reading history") {
				t.Fatalf("Decode error %v does not wrap ErrFormat", err)
			}
			return
		}
		// What decodes encodes, and decodes again to the same history.
		again, err := Decode(strings.NewReader(encoded(t, h)))
		if err != nil {
			t.Fatalf("Decode(Encode(Decode(in))) = %v", err)
		}
		if len(again.Ops) != len(h.Ops) || len(again.Attempts) != len(h.Attempts) || len(again.Readings) != len(h.Readings) {
			t.Fatalf("re-decoded history differs in size")
		}
	})
}

func TestCodecRoundTrip(t *testing.T) {
	h := sample()
	var buf bytes.Buffer
	if err := Encode(&buf, h); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, got, cmpopts.IgnoreUnexported(History{})); diff != "" {
		t.Errorf("Decode(Encode(h)) mismatch (-want +got):\n%s", diff)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := map[string]string{
		"empty":          "",
		"no header":      `{"type":"op","op":0,"key":"k"}`,
		"future version": `{"type":"header","format_version":99}`,
		"old version":    `{"type":"header","format_version":1}`,
		"not json":       "{\"type\":\"header\",\"format_version\":2}\nnope",
		"unknown op":     "{\"type\":\"header\",\"format_version\":2}\n{\"type\":\"attempt\",\"op\":3,\"n\":1,\"outcome\":\"ok\"}",
		"bad outcome":    "{\"type\":\"header\",\"format_version\":2}\n{\"type\":\"op\",\"op\":0,\"key\":\"k\"}\n{\"type\":\"attempt\",\"op\":0,\"n\":1,\"outcome\":\"maybe\"}",
		"unknown type":   "{\"type\":\"header\",\"format_version\":2}\n{\"type\":\"x\"}",
		"no trailer":     "{\"type\":\"header\",\"format_version\":2}\n{\"type\":\"op\",\"op\":0,\"key\":\"k\"}",
	}
	for name, in := range cases {
		_, err := Decode(strings.NewReader(in))
		if !errors.Is(err, ErrFormat) {
			t.Errorf("Decode(%s) = %v, want an error wrapping ErrFormat", name, err)
		}
	}
}

func TestAttemptsOfAndState(t *testing.T) {
	h := sample()
	if got := len(h.AttemptsOf(0)); got != 2 {
		t.Errorf("len(AttemptsOf(0)) = %d, want 2", got)
	}
	if got := len(h.AttemptsOf(2)); got != 0 {
		t.Errorf("len(AttemptsOf(2)) = %d, want 0", got)
	}
	if got := h.AttemptsOf(1)[0].N; got != 1 {
		t.Errorf("AttemptsOf(1)[0].N = %d, want 1 (sorted)", got)
	}
	cases := []struct {
		name string
		as   []Attempt
		want OpState
	}{
		{"none", nil, NotSent},
		{"all fail", []Attempt{{Outcome: Fail}, {Outcome: Fail}}, NotSent},
		{"info", []Attempt{{Outcome: Fail}, {Outcome: Info}}, Indeterminate},
		{"4xx", []Attempt{{Outcome: OK, Status: 409}}, Rejected},
		{"reset then 4xx", []Attempt{{Outcome: Fail}, {Outcome: OK, Status: 422}}, Rejected},
		{"lost then 4xx", []Attempt{{Outcome: Info}, {Outcome: OK, Status: 409}}, Indeterminate},
		{"4xx then lost", []Attempt{{Outcome: OK, Status: 409}, {Outcome: Info}}, Indeterminate},
		{"5xx", []Attempt{{Outcome: OK, Status: 500}}, Indeterminate},
		{"4xx to a duplicate", []Attempt{{Outcome: OK, Status: 409, Fault: FaultDuplicate}}, Indeterminate},
		{"4xx to every copy of a duplicate", []Attempt{{Outcome: OK, Status: 409, Fault: FaultDuplicate, Copies: 2,
			Answers: []Answer{{Copy: 2, Outcome: OK, Status: 409}}}}, Rejected},
		{"4xx to one copy, the other lost", []Attempt{{Outcome: OK, Status: 409, Fault: FaultDuplicate, Copies: 2,
			Answers: []Answer{{Copy: 2, Outcome: Info}}}}, Indeterminate},
		{"4xx to one copy, the other not recorded", []Attempt{{Outcome: OK, Status: 409, Fault: FaultDuplicate, Copies: 3,
			Answers: []Answer{{Copy: 2, Outcome: OK, Status: 409}}}}, Indeterminate},
		{"a mismatch says nothing", []Attempt{{Outcome: Fail}, {Outcome: OK, Status: 201, Fault: FaultMismatch}}, NotSent},
		{"acked after info", []Attempt{{Outcome: Info}, {Outcome: OK, Status: 201}}, Acked},
	}
	for _, c := range cases {
		if got := State(c.as); got != c.want {
			t.Errorf("State(%s) = %v, want %v", c.name, got, c.want)
		}
	}
	if got := OpLatency(h.AttemptsOf(0)); got != 7 {
		t.Errorf("OpLatency = %v, want 7ns (first intended to last end)", got)
	}
}

func TestOutcomeText(t *testing.T) {
	for _, o := range []Outcome{OK, Fail, Info} {
		b, _ := o.MarshalText()
		var back Outcome
		if err := back.UnmarshalText(b); err != nil || back != o {
			t.Errorf("round trip of %v = %v, %v", o, back, err)
		}
	}
	if _, err := ParseOutcome("maybe"); err == nil {
		t.Error("ParseOutcome(maybe) = nil error, want an error")
	}
}

// The attempt line's bytes are part of the history.jsonl format.
func TestEncodeAttemptLine(t *testing.T) {
	h := &History{
		Ops: []Op{{ID: 0, Key: "k0", User: "alice"}},
		Attempts: []Attempt{
			{Op: 0, N: 2, Fault: "drop_ack", Outcome: OK, Status: 201, Intended: 5 * time.Millisecond, Start: 6, End: 9,
				Fingerprint: 0xabc, Fields: map[string]string{"id": "ch_1", "a": "x"}, Err: "e"},
			{Op: 0, N: 3, Outcome: Fail},
		},
	}
	var buf bytes.Buffer
	if err := Encode(&buf, h); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []string{
		`{"type":"op","op":0,"key":"k0","user":"alice"}`,
		`{"type":"attempt","op":0,"n":2,"fault":"drop_ack","outcome":"ok","status":201,"intended_ns":5000000,"start_ns":6,"end_ns":9,"fingerprint":"0000000000000abc","fields":{"a":"x","id":"ch_1"},"error":"e"}`,
		`{"type":"attempt","op":0,"n":3,"outcome":"fail","intended_ns":0,"start_ns":0,"end_ns":0}`,
		`{"type":"end","ops":1,"attempts":2,"readings":0}`,
	}
	if diff := cmp.Diff(want, lines[1:]); diff != "" {
		t.Errorf("Encode lines mismatch (-want +got):\n%s", diff)
	}
}

func TestSorted(t *testing.T) {
	h := sample()
	if !h.Sorted() {
		t.Fatalf("Sorted() after Sort = false, want true")
	}
	if got := len(h.AttemptsOf(2)); got != 0 {
		t.Fatalf("len(AttemptsOf(2)) = %d, want 0", got)
	}
	// Already sorted: Sort must still drop the stale index.
	h.Attempts = append(h.Attempts, Attempt{Op: 2, N: 1, Outcome: OK})
	h.Sort()
	if got := len(h.AttemptsOf(2)); got != 1 {
		t.Errorf("len(AttemptsOf(2)) after append and Sort = %d, want 1", got)
	}
	cases := []struct {
		name string
		as   []Attempt
		want bool
	}{
		{"none", nil, true},
		{"one", []Attempt{{Op: 3, N: 2}}, true},
		{"ties", []Attempt{{Op: 0, N: 1}, {Op: 0, N: 1}}, true},
		{"op order", []Attempt{{Op: 1, N: 1}, {Op: 0, N: 2}}, false},
		{"attempt order", []Attempt{{Op: 0, N: 2}, {Op: 0, N: 1}}, false},
	}
	for _, c := range cases {
		h := &History{Attempts: c.as}
		if got := h.Sorted(); got != c.want {
			t.Errorf("Sorted(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
