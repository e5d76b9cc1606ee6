package runner

import (
	"bytes"
	"context"
	"math"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// count is how many of r's ops are due within [from, to).
func count(r Ramp, from, to time.Duration) int {
	first := sort.Search(1<<30, func(k int) bool { return r.Due(k) >= from })
	last := sort.Search(1<<30, func(k int) bool { return r.Due(k) >= to })
	return last - first
}

func TestRampHoldIsPacer(t *testing.T) {
	r := Ramp{{Duration: 10 * time.Second, From: 250, To: 250}}
	p := Pacer{Rate: 250}
	for _, k := range []int{0, 1, 2, 249, 250, 1000, 2499} {
		if got, want := r.Due(k), p.Due(k); got != want {
			t.Errorf("Ramp.Due(%d) = %v, want Pacer's %v", k, got, want)
		}
	}
	if got := r.Due(2500); got != math.MaxInt64 {
		t.Errorf("Ramp.Due(2500) past the end = %v, want never", got)
	}
}

// The ops due in each stage are the integral of its rate: a stage that
// holds 100/s for 2 s makes 200, a ramp from 100 to 300/s over 2 s 400
// (150 in its first second, as the rate goes 100→200, 250 in its
// second), a ramp down from 300 to 0 over 1 s 150; the ops are due in
// order, within their stages.
func TestRampDue(t *testing.T) {
	r := Ramp{
		{Duration: 2 * time.Second, From: 100, To: 100},
		{Duration: 2 * time.Second, From: 100, To: 300},
		{Duration: time.Second, From: 300, To: 0},
	}
	s := time.Second
	for _, c := range []struct {
		from, to time.Duration
		want     int
	}{
		{0, 2 * s, 200},
		{2 * s, 4 * s, 400},
		{2 * s, 3 * s, 150},
		{3 * s, 4 * s, 250},
		{4 * s, 5 * s, 150},
		{0, math.MaxInt64, 750},
	} {
		got := count(r, c.from, c.to)
		if diff := got - c.want; diff < -1 || diff > 1 {
			t.Errorf("ops due in [%v, %v) = %d, want %d (±1)", c.from, c.to, got, c.want)
		}
	}
	prev := time.Duration(-1)
	for k := 0; k < 750; k++ {
		d := r.Due(k)
		if d < prev || d >= 5*s {
			t.Fatalf("Due(%d) = %v after Due(%d) = %v: want increasing, before the end 5s", k, d, k-1, prev)
		}
		prev = d
	}
	if got := r.Due(751); got != math.MaxInt64 {
		t.Errorf("Due(751) = %v, want never", got)
	}
}

// A first stage that ramps from 0 makes its first op due at once and the
// rest along the quadratic: ops k due at sqrt(2kD/R).
func TestRampFromZero(t *testing.T) {
	r := Ramp{{Duration: 10 * time.Second, From: 0, To: 100}}
	if got := r.Due(0); got != 0 {
		t.Errorf("Due(0) = %v, want 0", got)
	}
	for _, k := range []int{1, 50, 499} {
		want := time.Duration(math.Sqrt(2*float64(k)*10/100) * float64(time.Second))
		if got := r.Due(k); (got - want).Abs() > time.Microsecond {
			t.Errorf("Due(%d) = %v, want %v", k, got, want)
		}
	}
}

func TestRampWorkers(t *testing.T) {
	s := time.Second
	r := Ramp{
		{Duration: 2 * s, From: 2, To: 2},
		{Duration: 4 * s, From: 2, To: 6},
		{Duration: 2 * s, From: 6, To: 1},
	}
	for _, c := range []struct {
		at   time.Duration
		want int
	}{
		{0, 2}, {1999 * time.Millisecond, 2},
		{2 * s, 2}, {2*s + 499*time.Millisecond, 2}, {2*s + 500*time.Millisecond, 3}, {5*s + 500*time.Millisecond, 6},
		{6 * s, 6}, {7 * s, 4}, {8*s - 1, 1}, {8 * s, 0},
	} {
		if got := r.Workers(c.at); got != c.want {
			t.Errorf("Workers(%v) = %d, want %d", c.at, got, c.want)
		}
	}
	// Wake agrees with Workers: worker i works at t exactly when
	// Workers(t) > i, and a worker that waits is woken when its turn
	// comes, not later.
	for i := range 7 {
		for at := time.Duration(0); at < 8*s; at += 7 * time.Millisecond {
			w, ok := r.Wake(i, at)
			works := r.Workers(at) > i
			switch {
			case works && (!ok || w != at):
				t.Fatalf("Wake(%d, %v) = %v, %v: want %v, true (Workers = %d)", i, at, w, ok, at, r.Workers(at))
			case !works && ok && w <= at:
				t.Fatalf("Wake(%d, %v) = %v: want later, Workers = %d", i, at, w, r.Workers(at))
			case !works && ok && r.Workers(w+time.Microsecond) <= i:
				t.Fatalf("Wake(%d, %v) = %v, where Workers = %d", i, at, w, r.Workers(w+time.Microsecond))
			case !works && ok && r.Workers(w-time.Millisecond) > i && w-time.Millisecond > at:
				t.Fatalf("Wake(%d, %v) = %v, later than its turn (Workers(%v) = %d)", i, at, w, w-time.Millisecond, r.Workers(w-time.Millisecond))
			}
		}
	}
	if _, ok := r.Wake(6, 6*s); ok {
		t.Error("worker 6 wakes in the ramp down, which never needs it")
	}
	if at, ok := r.Wake(3, 0); !ok || at != 3500*time.Millisecond {
		t.Errorf("Wake(3, 0) = %v, %v: want 3.5s (the ramp 2→6 from 2 s to 6 s reaches 3.5 at 3.5 s)", at, ok)
	}
}

func TestRampCut(t *testing.T) {
	s := time.Second
	r := Ramp{{Duration: 2 * s, From: 10, To: 10}, {Duration: 4 * s, From: 10, To: 50}, {Duration: s, From: 50, To: 50}}
	got := r.Cut(3 * s)
	want := Ramp{{Duration: 2 * s, From: 10, To: 10}, {Duration: s, From: 10, To: 20}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Cut(3s) = %v, want %v", got, want)
	}
	if got := r.Cut(time.Hour); len(got) != 3 || got.End() != 7*s {
		t.Errorf("Cut past the end = %v, want the ramp whole", got)
	}
	for k := range 35 { // 20 + 15 ops due before 3s
		if r.Due(k) != got.Due(k) {
			t.Fatalf("Cut(3s).Due(%d) = %v, want %v as before the cut", k, got.Due(k), r.Due(k))
		}
	}
}

func stagedScenario(stages ...scenarios.Stage) *scenarios.Scenario {
	return &scenarios.Scenario{
		Name: "staged",
		Operation: scenarios.Operation{
			Request: scenarios.Request{Method: "POST", Path: "/charges", Body: `{"amount":1}`},
			Key:     scenarios.KeyPlace{Header: "Idempotency-Key"},
		},
		Load:  scenarios.Load{Stages: stages, MaxInFlight: 64},
		Retry: scenarios.Retry{Attempts: 1, On: scenarios.DefaultRetryOn()},
	}
}

// The open model in stages sends each op at the time its stages' ramp
// makes it due (its first attempt's intended start), records the stages,
// and tells the observer before Start.
func TestStagesOpen(t *testing.T) {
	u := loopback(t, nil)
	ms := 1 * time.Millisecond
	sc := stagedScenario(
		scenarios.Stage{Duration: scenarios.Duration(150 * ms), Rate: 200},
		scenarios.Stage{Duration: scenarios.Duration(150 * ms), Rate: 400, Ramp: true},
	)
	obs := &stageObs{}
	h, err := Run(context.Background(), sc, Options{Target: u, Seed: 1, Observer: Observers{obs}}) // heard through Observers, as run wires progress
	if err != nil {
		t.Fatal(err)
	}
	ramp := Ramp{{Duration: 150 * ms, From: 200, To: 200}, {Duration: 150 * ms, From: 200, To: 400}}
	if len(h.Ops) == 0 || len(h.Ops) > 76 {
		t.Fatalf("%d ops, want 1 to 75 (30 + 45 due)", len(h.Ops))
	}
	for _, op := range h.Ops {
		as := h.AttemptsOf(op.ID)
		if got, want := as[0].Intended, ramp.Due(op.ID); got != want {
			t.Fatalf("op %d intended at %v, want %v (Ramp.Due)", op.ID, got, want)
		}
	}
	want := []history.Stage{{Duration: 150 * ms, Rate: 200}, {Duration: 150 * ms, Rate: 400, Ramp: true}}
	if len(h.Meta.Stages) != 2 || h.Meta.Stages[0] != want[0] || h.Meta.Stages[1] != want[1] {
		t.Errorf("Meta.Stages = %v, want %v", h.Meta.Stages, want)
	}
	if len(obs.stages) != 2 || !obs.beforeStart {
		t.Errorf("observer heard stages %v (before Start: %v), want the two stages before Start", obs.stages, obs.beforeStart)
	}
	if obs.dur != 300*ms {
		t.Errorf("observer's Start duration = %v, want the stages' 300ms", obs.dur)
	}
	// the load lasts as long as its stages, past its last op's time
	if ran := h.Meta.Ended.Sub(h.Meta.Started); ran < 300*ms {
		t.Errorf("the load ran %v, want the stages' 300ms", ran)
	}
}

// An open-model load in stages bound by ops ends once they are sent, not
// with its stages.
func TestStagesOpenOpsEnd(t *testing.T) {
	u := loopback(t, nil)
	sc := stagedScenario(scenarios.Stage{Duration: scenarios.Duration(time.Hour), Rate: 1000})
	sc.Load.Ops = 5
	h, err := Run(context.Background(), sc, Options{Target: u, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Ops) != 5 {
		t.Errorf("%d ops, want 5", len(h.Ops))
	}
	if ran := h.Meta.Ended.Sub(h.Meta.Started); ran > bound {
		t.Errorf("the run took %v after its 5 ops", ran)
	}
}

type stageObs struct {
	stages      []history.Stage
	beforeStart bool
	started     bool
	dur         time.Duration
}

func (o *stageObs) Stages(ss []history.Stage) { o.stages, o.beforeStart = ss, !o.started }
func (o *stageObs) Start(_ int, d time.Duration) {
	o.started, o.dur = true, d
}
func (o *stageObs) OpDone(int, history.OpState) {}

// The closed model in stages starts the most workers a stage needs, and
// worker i takes ops only in its turns: in a first stage of one worker,
// the ops never overlap; no more ops overlap than the stage's workers.
func TestStagesClosed(t *testing.T) {
	u := loopback(t, nil)
	ms := time.Millisecond
	sc := stagedScenario(
		scenarios.Stage{Duration: scenarios.Duration(100 * ms), Concurrency: 1},
		scenarios.Stage{Duration: scenarios.Duration(150 * ms), Concurrency: 3},
	)
	h, err := Run(context.Background(), sc, Options{Target: u, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ start, end time.Duration }
	var first []span
	for _, op := range h.Ops {
		as := h.AttemptsOf(op.ID)
		if as[0].Intended < 100*ms {
			first = append(first, span{as[0].Intended, as[len(as)-1].End})
		}
	}
	if len(first) == 0 {
		t.Fatal("no op in the first stage")
	}
	sort.Slice(first, func(i, j int) bool { return first[i].start < first[j].start })
	for i := 1; i < len(first); i++ {
		if first[i].start < first[i-1].end {
			t.Fatalf("two ops of the one-worker stage overlap: %v and %v", first[i-1], first[i])
		}
	}
	if len(h.Ops) == len(first) {
		t.Errorf("no op in the second stage, of %d ops", len(h.Ops))
	}
}

// A closed-model load in stages bound by ops ends once they are taken,
// though workers wait for a later stage.
func TestStagesClosedOpsEnd(t *testing.T) {
	u := loopback(t, nil)
	sc := stagedScenario(
		scenarios.Stage{Duration: scenarios.Duration(20 * time.Millisecond), Concurrency: 1},
		scenarios.Stage{Duration: scenarios.Duration(time.Hour), Concurrency: 8},
	)
	sc.Load.Ops = 3
	start := time.Now()
	h, err := Run(context.Background(), sc, Options{Target: u, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Ops) != 3 {
		t.Errorf("%d ops, want 3", len(h.Ops))
	}
	if el := time.Since(start); el > bound {
		t.Errorf("the run took %v after its 3 ops", el)
	}
}

// A shard runs its part of each stage's workers.
func TestStagesShardPart(t *testing.T) {
	sc := stagedScenario(
		scenarios.Stage{Duration: scenarios.Duration(time.Second), Concurrency: 5},
		scenarios.Stage{Duration: scenarios.Duration(time.Second), Concurrency: 9, Ramp: true},
	)
	r := &run{load: sc.Load, shard: history.Shard{Index: 1, Count: 2}}
	if err := r.stage(sc.Load); err != nil {
		t.Fatal(err)
	}
	want := Ramp{{Duration: time.Second, From: 2, To: 2}, {Duration: time.Second, From: 2, To: 4}}
	if len(r.ramp) != 2 || r.ramp[0] != want[0] || r.ramp[1] != want[1] {
		t.Errorf("shard 1/2's ramp = %v, want %v", r.ramp, want)
	}
	if got := r.workers(); got != 4 {
		t.Errorf("shard 1/2 starts %d workers, want 4 (its part of 9)", got)
	}
	if r.load.Duration.Std() != 2*time.Second {
		t.Errorf("load ends at %v, want the stages' 2s", r.load.Duration)
	}
	// --duration shorter than the stages cuts them
	l := sc.Load
	l.Duration = scenarios.Duration(1500 * time.Millisecond)
	r = &run{load: l}
	if err := r.stage(l); err != nil {
		t.Fatal(err)
	}
	if got := r.ramp.End(); got != 1500*time.Millisecond || r.ramp[1].To != 7 {
		t.Errorf("cut ramp = %v, want one ending at 1.5s at 7 workers", r.ramp)
	}
}

func TestDryRunStages(t *testing.T) {
	sc := stagedScenario(
		scenarios.Stage{Duration: scenarios.Duration(10 * time.Second), Rate: 50},
		scenarios.Stage{Duration: scenarios.Duration(20 * time.Second), Rate: 200, Ramp: true},
	)
	sc.Load.Duration = scenarios.Duration(30 * time.Second)
	var b bytes.Buffer
	u := loopback(t, nil)
	if err := DryRun(context.Background(), &b, sc, []*url.URL{u}, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	want := "load: for 30s, open model in 2 stages\n  stage 1: 10s at 50 ops/s\n  stage 2: 20s, ramp 50 → 200 ops/s\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("DryRun =\n%s\nwant it to hold\n%s", b.String(), want)
	}
}
