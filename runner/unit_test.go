package runner

import (
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

func TestPacer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rate float64
		hit  int
		want time.Duration
	}{
		{rate: 100, hit: 0, want: 0},
		{rate: 100, hit: 1, want: 10 * time.Millisecond},
		{rate: 100, hit: 101, want: 1010 * time.Millisecond},
		{rate: 0.5, hit: 1, want: 2 * time.Second},
		{rate: 30000, hit: 3, want: 100 * time.Microsecond},
		{rate: 0, hit: 7, want: 0},
	}
	for _, tt := range tests {
		if got := (Pacer{Rate: tt.rate}).Due(tt.hit); got != tt.want {
			t.Errorf("Pacer{%v}.Due(%d) = %v, want %v", tt.rate, tt.hit, got, tt.want)
		}
	}
	// Over a second, Rate ops are due.
	p := Pacer{Rate: 250}
	hits := 0
	for p.Due(hits) < time.Second {
		hits++
	}
	if hits != 250 {
		t.Errorf("Pacer{250}: %d ops due in 1s, want 250", hits)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
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

func TestMerge(t *testing.T) {
	t.Parallel()
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

func TestRetryOn(t *testing.T) {
	t.Parallel()
	type try struct {
		outcome history.Outcome
		status  int
		want    bool
	}
	tests := []struct {
		on    []string
		tries []try
	}{
		{scenarios.DefaultRetryOn(), []try{
			{history.Fail, 0, true}, {history.Info, 0, true},
			{history.OK, 409, true}, {history.OK, 429, true}, {history.OK, 500, true}, {history.OK, 503, true}, {history.OK, 599, true},
			{history.OK, 200, false}, {history.OK, 201, false}, {history.OK, 400, false}, {history.OK, 422, false}, {history.OK, 600, false}, {history.OK, 0, false}, {history.OK, -1, false},
		}},
		{[]string{"4xx"}, []try{
			{history.Fail, 0, false}, {history.Info, 0, false},
			{history.OK, 400, true}, {history.OK, 499, true}, {history.OK, 500, false}, {history.OK, 399, false},
		}},
		{[]string{"info", "503"}, []try{
			{history.Fail, 0, false}, {history.Info, 0, true}, {history.OK, 503, true}, {history.OK, 502, false},
		}},
		// A 2xx is never retried, even when listed.
		{[]string{"201", "fail"}, []try{{history.OK, 201, false}, {history.Fail, 0, true}}},
		{nil, []try{{history.Fail, 0, false}, {history.Info, 0, false}, {history.OK, 500, false}}},
	}
	for _, tt := range tests {
		r, err := newRetryOn(tt.on)
		if err != nil {
			t.Fatalf("newRetryOn(%q) error = %v", tt.on, err)
		}
		for _, x := range tt.tries {
			if got := r.match(x.outcome, x.status); got != x.want {
				t.Errorf("newRetryOn(%q).match(%v, %d) = %v, want %v", tt.on, x.outcome, x.status, got, x.want)
			}
		}
	}
	for _, bad := range []string{"", "timeout", "5XX", "6xx", "99", "600", "4099", "+409", "x09"} {
		if _, err := newRetryOn([]string{"info", bad}); err == nil || !strings.Contains(err.Error(), "retry.on[1]") {
			t.Errorf("newRetryOn(info, %q) error = %v, want one naming retry.on[1]", bad, err)
		}
	}
}

// The retry decision is made once, when the run starts: changing the
// scenario afterwards changes nothing, and a bad retry.on stops the run
// before a request is sent.
func TestRetryCompiledOnce(t *testing.T) {
	t.Parallel()
	sc := scenario(nil)
	r, err := compile(sc, Options{Target: &url.URL{Scheme: "http", Host: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	sc.Retry.On = nil
	sc.Retry.Backoff.Initial = scenarios.Duration(time.Hour)
	if !r.retryOn.match(history.OK, 503) || !r.retryOn.match(history.Info, 0) {
		t.Errorf("the compiled retry.on changed with the scenario")
	}
	if got := r.backoff.initial; got != 100*time.Microsecond {
		t.Errorf("compiled backoff initial = %v, want 100µs", got)
	}

	s := newServer(t, nil)
	sc = scenario(func(sc *scenarios.Scenario) { sc.Retry.On = []string{"5xx", "teapot"} })
	if _, err := Run(runCtx(t), sc, Options{Target: s.URL}); err == nil || !strings.Contains(err.Error(), "retry.on[1]") {
		t.Errorf("Run() with retry.on teapot error = %v, want one naming retry.on[1]", err)
	}
	if n := s.count.Load(); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
}

// Every kind of attempt comes out of a worker's log as it went in: the
// compact ones (every field of an answer, every fault) and the ones kept
// whole (an error, evidence, fields, other answers, an unknown fault).
func TestAttemptLogKeepsEveryField(t *testing.T) {
	t.Parallel()
	in := []history.Attempt{
		{Op: 0, N: 1, Outcome: history.OK, Status: 201, Intended: 1, Start: 2, End: 3, Fingerprint: 0xfeed, Target: 2, Size: 1 << 40},
		{Op: 0, N: 2, Outcome: history.Info, Fault: faults.KindDropAck, Err: "dropped", Answers: []history.Answer{{Hidden: true, Outcome: history.OK, Status: 201}}},
		{Op: 1, N: 1, Outcome: history.OK, Status: 500, Fault: faults.KindDuplicate, Copies: 3, Body: "oops"},
		{Op: 1, N: 2, Outcome: history.OK, Status: 200, Fault: history.FaultReplay, Fields: map[string]string{"id": "ch_1"}},
		{Op: 2, N: 1, Outcome: history.Fail, Fault: "some_new_fault"},
		{Op: 2, N: 2, Outcome: history.OK, Status: 409, Fault: faults.KindDelay, Bit: true},
		{Op: 2, N: 3, Outcome: history.OK, Status: 201, Headers: map[string]string{"Location": "/charges/ch_1"}},
		{Op: 2, N: 4, Outcome: history.Info, Expired: true, Err: "no answer within 1s (request timeout)"},
		{Op: 2, N: 5, Outcome: history.OK, Status: 201, Label: "round 1: first", Request: &history.Request{Method: "POST", URL: "http://x/", NoKey: true}},
	}
	for _, k := range faultKinds {
		in = append(in, history.Attempt{Op: 3, N: len(in), Outcome: history.OK, Status: 200, Fault: k})
	}
	var r recorder
	for i := range 4 {
		r.ops.add(history.Op{ID: i})
	}
	for _, a := range in {
		r.attempts.add(a)
	}
	_, out := merge([]*recorder{&r})
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("attempts after the log (-in +out):\n%s", diff)
	}
	if len(r.attempts.rare) != 0 || r.attempts.n != 0 {
		t.Errorf("the log keeps %d rare attempts after its drain", len(r.attempts.rare))
	}
}

// The compact record names every field of history.Attempt: a field added
// there must be added to compactAttempt (or make attemptLog.add keep such
// attempts whole), or the log would drop it silently.
func TestAttemptLogKnowsEveryField(t *testing.T) {
	t.Parallel()
	known := []string{"Op", "N", "Fault", "Outcome", "Status", "Intended", "Start", "End", "Fingerprint",
		"Fields", "Err", "Target", "Copies", "Size", "Body", "Answers", "Headers", "Expired", "Label", "Request", "Bit", "Synced", "Sent"}
	var got []string
	for f := range reflect.TypeFor[history.Attempt]().Fields() {
		got = append(got, f.Name)
	}
	if !slices.Equal(got, known) {
		t.Errorf("history.Attempt has the fields %v; the attempt log knows %v: update compactAttempt", got, known)
	}
}
