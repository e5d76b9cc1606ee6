package runner

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
