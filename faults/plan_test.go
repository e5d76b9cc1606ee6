package faults

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNewValid(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want Fault
	}{
		{Spec{Kind: KindDropAck, Rate: 0.1}, DropAck{}},
		{Spec{Kind: KindReset, Rate: 1, Attempts: []int{1}}, Reset{}},
		{Spec{Kind: KindTimeout, After: 50 * time.Millisecond}, Timeout{After: 50 * time.Millisecond}},
		{Spec{Kind: KindDuplicate}, Duplicate{Copies: 2}},
		{Spec{Kind: KindDuplicate, Copies: 5}, Duplicate{Copies: 5}},
		{Spec{Kind: KindDelay, Delay: time.Millisecond}, Delay{Wait: time.Millisecond}},
	} {
		got, err := New(tc.spec)
		if err != nil || got != tc.want {
			t.Errorf("New(%+v) = %v, %v; want %v, nil", tc.spec, got, err, tc.want)
		}
	}
}

func TestNewInvalid(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   Spec
		fields []string // the SpecError fields expected, in order
	}{
		{"unknown kind", Spec{Kind: "latency"}, []string{"kind"}},
		{"empty kind", Spec{}, []string{"kind"}},
		{"negative rate", Spec{Kind: KindReset, Rate: -0.1}, []string{"rate"}},
		{"rate over 1", Spec{Kind: KindReset, Rate: 1.5}, []string{"rate"}},
		{"NaN rate", Spec{Kind: KindReset, Rate: math.NaN()}, []string{"rate"}},
		{"attempt 0", Spec{Kind: KindReset, Attempts: []int{1, 0}}, []string{"attempts"}},
		{"timeout without after", Spec{Kind: KindTimeout}, []string{"after"}},
		{"timeout negative after", Spec{Kind: KindTimeout, After: -time.Second}, []string{"after"}},
		{"one copy", Spec{Kind: KindDuplicate, Copies: 1}, []string{"copies"}},
		{"negative copies", Spec{Kind: KindDuplicate, Copies: -3}, []string{"copies"}},
		{"delay without delay", Spec{Kind: KindDelay}, []string{"delay"}},
		{"after on a reset", Spec{Kind: KindReset, After: time.Second}, []string{"after"}},
		{"copies on a timeout", Spec{Kind: KindTimeout, After: time.Second, Copies: 2}, []string{"copies"}},
		{"delay on a drop_ack", Spec{Kind: KindDropAck, Delay: time.Second}, []string{"delay"}},
		{"every problem at once", Spec{Kind: KindTimeout, Rate: 2, Attempts: []int{-1}, Delay: time.Second},
			[]string{"rate", "attempts", "delay", "after"}},
		{"unknown kind and bad rate", Spec{Kind: "x", Rate: 3}, []string{"rate", "kind"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(tc.spec)
			if err == nil {
				t.Fatalf("New(%+v) = %v, nil; want an error", tc.spec, f)
			}
			if f != nil {
				t.Errorf("New(%+v) fault = %v, want nil with an error", tc.spec, f)
			}
			var fields []string
			for _, se := range collectSpecErrors(err) {
				fields = append(fields, se.Field)
			}
			if diff := cmp.Diff(tc.fields, fields); diff != "" {
				t.Errorf("New(%+v) problems (-want +got):\n%s\nerror: %v", tc.spec, diff, err)
			}
		})
	}
}

func TestNewMessages(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "latency"}, `kind: "latency" is not a known fault (known: delay, drop_ack, duplicate, reset, timeout)`},
		{Spec{Kind: KindTimeout}, "timeout fault: after: a timeout fault needs after > 0 (the client deadline), got 0s"},
		{Spec{Kind: KindDuplicate, Copies: 1}, "duplicate fault: copies: a duplicate fault needs copies >= 2, got 1"},
		{Spec{Kind: KindDuplicate, Copies: 100001}, "duplicate fault: copies: at most 100 copies of one attempt, got 100001: each copy's answer is kept in memory"},
		{Spec{Kind: KindReset, Rate: 1.5}, "reset fault: rate: must be between 0 and 1, got 1.5"},
	} {
		_, err := New(tc.spec)
		if err == nil || err.Error() != tc.want {
			t.Errorf("New(%+v) error = %v, want %q", tc.spec, err, tc.want)
		}
	}
}

// TestKindsKeepTheirPlace: Kinds lists today's kinds in alphabetical
// order; a kind added later goes at the end, here too, so no kind's
// place moves.
func TestKindsKeepTheirPlace(t *testing.T) {
	want := []string{KindDelay, KindDropAck, KindDuplicate, KindReset, KindTimeout}
	if diff := cmp.Diff(want, Kinds()); diff != "" {
		t.Errorf("Kinds() (-want +got):\n%s", diff)
	}
}

// mixedSpecs is a plan with every kind of fault.
var mixedSpecs = []Spec{
	{Kind: KindDropAck, Rate: 0.10},
	{Kind: KindTimeout, Rate: 0.05, After: 20 * time.Millisecond},
	{Kind: KindDuplicate, Rate: 0.15},
	{Kind: KindReset, Rate: 0.20},
	{Kind: KindDelay, Rate: 0.10, Delay: time.Millisecond},
}

func mustPlan(t testing.TB, seed uint64, specs []Spec) *Plan {
	t.Helper()
	p, err := NewPlan(seed, specs)
	if err != nil {
		t.Fatalf("NewPlan(%d, %+v): %v", seed, specs, err)
	}
	return p
}

// kindOf is the kind of f, "" for no fault.
func kindOf(f Fault) string {
	if f == nil {
		return ""
	}
	return f.Kind()
}

// picks lists the kinds picked for ops×attempts pairs.
func picks(p *Plan, ops, attempts int) []string {
	out := make([]string, 0, ops*attempts)
	for op := range ops {
		for a := 1; a <= attempts; a++ {
			out = append(out, kindOf(p.Pick(op, a)))
		}
	}
	return out
}

func TestPlanReproducible(t *testing.T) {
	a := picks(mustPlan(t, 42, mixedSpecs), 2500, 4)
	b := picks(mustPlan(t, 42, mixedSpecs), 2500, 4)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two plans with seed 42 differ (-first +second):\n%s", diff)
	}
	// Any order of calls, from any goroutine, gives the same picks.
	p := mustPlan(t, 42, mixedSpecs)
	rev := make([]string, len(a))
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := len(a) - 1 - w; i >= 0; i -= 4 {
				rev[i] = kindOf(p.Pick(i/4, i%4+1))
			}
		}()
	}
	for range 4 {
		<-done
	}
	if diff := cmp.Diff(a, rev); diff != "" {
		t.Errorf("concurrent reverse-order picks differ (-sequential +concurrent):\n%s", diff)
	}

	c := picks(mustPlan(t, 43, mixedSpecs), 2500, 4)
	differ := 0
	for i := range a {
		if a[i] != c[i] {
			differ++
		}
	}
	// With 60% faulted attempts, two independent seeds disagree on about
	// half of the pairs.
	if differ < len(a)/4 {
		t.Errorf("seeds 42 and 43 differ on %d of %d picks, want at least %d", differ, len(a), len(a)/4)
	}
}

func TestPlanRates(t *testing.T) {
	const n = 100_000
	for _, seed := range []uint64{0, 1, 42, math.MaxUint64} {
		p := mustPlan(t, seed, mixedSpecs)
		counts := map[string]int{}
		for op := range n {
			counts[kindOf(p.Pick(op, 1+op%5))]++
		}
		want := map[string]float64{"": 0.40}
		for _, s := range mixedSpecs {
			want[s.Kind] = s.Rate
		}
		for kind, rate := range want {
			got := float64(counts[kind]) / n
			if math.Abs(got-rate) > 0.01 {
				t.Errorf("seed %d: share of %q = %.4f, want %.2f ± 0.01", seed, kind, got, rate)
			}
		}
	}
}

func TestPlanAttempts(t *testing.T) {
	p := mustPlan(t, 7, []Spec{
		{Kind: KindDropAck, Rate: 0.5, Attempts: []int{1}},
		{Kind: KindReset, Rate: 0.5, Attempts: []int{2, 3}},
	})
	const ops = 10_000
	counts := map[int]map[string]int{}
	for a := 1; a <= 4; a++ {
		counts[a] = map[string]int{}
		for op := range ops {
			counts[a][kindOf(p.Pick(op, a))]++
		}
	}
	for a, c := range counts {
		for kind, n := range c {
			allowed := kind == "" || (kind == KindDropAck && a == 1) || (kind == KindReset && (a == 2 || a == 3))
			if !allowed {
				t.Errorf("attempt %d got %s %d times, want never", a, kind, n)
			}
		}
	}
	// Each targeted attempt gets its fault about half the time.
	for _, tc := range []struct {
		attempt int
		kind    string
	}{{1, KindDropAck}, {2, KindReset}, {3, KindReset}} {
		if got := float64(counts[tc.attempt][tc.kind]) / ops; math.Abs(got-0.5) > 0.03 {
			t.Errorf("attempt %d: share of %s = %.3f, want 0.5 ± 0.03", tc.attempt, tc.kind, got)
		}
	}
	if got := counts[4][""]; got != ops {
		t.Errorf("attempt 4: %d attempts without a fault, want all %d", got, ops)
	}
}

func TestPlanEdgeRates(t *testing.T) {
	always := mustPlan(t, 1, []Spec{{Kind: KindReset, Rate: 1}})
	never := mustPlan(t, 1, []Spec{{Kind: KindReset, Rate: 0}})
	empty := mustPlan(t, 1, nil)
	var nilPlan *Plan
	for op := range 1000 {
		if f := always.Pick(op, 1); f != (Reset{}) {
			t.Fatalf("rate 1: Pick(%d, 1) = %v, want reset", op, f)
		}
		for _, p := range []*Plan{never, empty, nilPlan} {
			if f := p.Pick(op, 1); f != nil {
				t.Fatalf("no fault plan: Pick(%d, 1) = %v, want nil", op, f)
			}
		}
	}
	// Ten shares of 0.1 sum to 1 up to rounding: accepted.
	var tenths []Spec
	for range 10 {
		tenths = append(tenths, Spec{Kind: KindDropAck, Rate: 0.1})
	}
	mustPlan(t, 1, tenths)
}

func TestNewPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		specs  []Spec
		fields []string
	}{
		{"rates over 1", []Spec{{Kind: KindReset, Rate: 0.6}, {Kind: KindDropAck, Rate: 0.5}}, []string{"rate"}},
		{"bad specs", []Spec{{Kind: "nope"}, {Kind: KindTimeout}}, []string{"kind", "after"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(1, tc.specs)
			if err == nil {
				t.Fatalf("NewPlan(%+v) = %v, nil; want an error", tc.specs, p)
			}
			var fields []string
			for _, se := range collectSpecErrors(err) {
				fields = append(fields, se.Field)
			}
			if diff := cmp.Diff(tc.fields, fields); diff != "" {
				t.Errorf("NewPlan(%+v) problems (-want +got):\n%s\nerror: %v", tc.specs, diff, err)
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Errorf("errors.As(%v, *SpecError) = false", err)
			}
		})
	}
}

func TestPlanPickAllocs(t *testing.T) {
	p := mustPlan(t, 42, append(mixedSpecs[:4:4], Spec{Kind: KindDelay, Rate: 0.1, Delay: time.Millisecond, Attempts: []int{2, 3}}))
	op := 0
	if n := testing.AllocsPerRun(1000, func() { op++; p.Pick(op, 1+op%4) }); n != 0 {
		t.Errorf("Pick allocates %v times per call, want 0", n)
	}
}

func BenchmarkPlanPick(b *testing.B) {
	p := mustPlan(b, 42, append(mixedSpecs[:4:4], Spec{Kind: KindDelay, Rate: 0.1, Delay: time.Millisecond, Attempts: []int{2, 3}}))
	b.ReportAllocs()
	var sink Fault
	i := 0
	for b.Loop() {
		sink = p.Pick(i, 1+i%4)
		i++
	}
	_ = sink
}

// TestHashUnit pins Hash and Unit to the values the plan and the runner's
// jitter drew before they shared them: a change here changes every seeded
// run.
func TestHashUnit(t *testing.T) {
	for _, tc := range []struct {
		seed uint64
		xs   []uint64
		hash uint64
		unit float64
	}{
		{0, nil, 0xe220a8397b1dcdaf, 0.8833108082136426}, // SplitMix64's first output from state 0
		{7, []uint64{3, 2}, 0x9473a693c473a79, 0.03624310559487476},
		{1, []uint64{0, 1}, 0x6c5795e14b3b7e33, 0.42321144819582723},
		{0xdeadbeef, []uint64{1000, 5}, 0xe3de4048be208430, 0.8901100328058664},
	} {
		if got := Hash(tc.seed, tc.xs...); got != tc.hash {
			t.Errorf("Hash(%#x, %v) = %#x, want %#x", tc.seed, tc.xs, got, tc.hash)
		}
		if got := Unit(tc.seed, tc.xs...); got != tc.unit {
			t.Errorf("Unit(%#x, %v) = %v, want %v", tc.seed, tc.xs, got, tc.unit)
		}
	}
}
