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
		Meta: Meta{Scenario: "s", Target: "http://127.0.0.1:1", Seed: 42, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		Ops:  []Op{{ID: 0, Key: "k0", User: "alice"}, {ID: 1, Key: "k1"}, {ID: 2, Key: "k2"}},
		Attempts: []Attempt{
			{Op: 1, N: 2, Outcome: OK, Status: 201, Intended: 5, Start: 6, End: 9, Fingerprint: 0xabc, Fields: map[string]string{"id": "ch_1"}},
			{Op: 0, N: 1, Fault: "drop_ack", Outcome: Info, Intended: 1, Start: 1, End: 3, Err: "dropped"},
			{Op: 1, N: 1, Fault: "reset", Outcome: Fail, Intended: 2, Start: 2, End: 2},
			{Op: 0, N: 2, Outcome: OK, Status: 201, Intended: 4, Start: 4, End: 8, Fingerprint: 1},
		},
	}
	h.Sort()
	return h
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
		"not json":       "{\"type\":\"header\",\"format_version\":1}\nnope",
		"unknown op":     "{\"type\":\"header\",\"format_version\":1}\n{\"type\":\"attempt\",\"op\":3,\"n\":1,\"outcome\":\"ok\"}",
		"bad outcome":    "{\"type\":\"header\",\"format_version\":1}\n{\"type\":\"op\",\"op\":0,\"key\":\"k\"}\n{\"type\":\"attempt\",\"op\":0,\"n\":1,\"outcome\":\"maybe\"}",
		"unknown type":   "{\"type\":\"header\",\"format_version\":1}\n{\"type\":\"x\"}",
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
