package abtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Defaults of Options.
const (
	DefaultBlock       = 500 * time.Millisecond
	DefaultMaxInFlight = 256
)

// Options say how the A/B runs.
type Options struct {
	// Rate is each arm's arrival rate in ops per second (> 0).
	Rate float64
	// Duration is each arm's measured time, warm-up left out (> 0).
	Duration time.Duration
	// Warmup is each arm's discarded time before the measured blocks.
	Warmup time.Duration
	// Block is the length of one arm's block; 0 means DefaultBlock. The
	// measured rounds are Duration / Block, at least 2.
	Block time.Duration
	// MaxInFlight caps each arm's concurrent ops; 0 means
	// DefaultMaxInFlight.
	MaxInFlight int
	// Runner carries the target(s), transport, env and request timeout.
	// Its Seed and KeyNonce are set per block: every block sends new keys.
	Runner runner.Options
	// Rand draws the blocks' key nonces; nil means a source seeded from
	// Runner.Seed.
	Rand *rand.Rand
	// Block, when not nil, hears of each block as it ends (for progress):
	// the round (negative for warm-up), the arm ("a" or "b").
	OnBlock func(round int, arm string)
}

// Arm is one arm's measured figures.
type Arm struct {
	// Name is "a" or "b".
	Name string
	// Scenario names the arm's scenario.
	Scenario string
	// Hist holds every measured op's latency in µs (measure.NewHistogram).
	Hist *hdrhistogram.Histogram
	// Ops is how many measured ops were sent, Acked how many got a 2xx.
	Ops, Acked int
	// Scheduled is how many ops the pacer should have sent.
	Scheduled int
	// Elapsed is the measured blocks' total scheduled time (each block's
	// length): the window the ops were offered in.
	Elapsed time.Duration
	// Growing counts the blocks whose latency grew within the block (the
	// median of the last quarter of its ops over twice the first
	// quarter's, plus 2ms): a queue building up, the arm saturated.
	Growing int
	// FirstError is the first error or non-2xx answer seen, if any.
	FirstError string

	blocks [][]int64 // per measured round: sorted latencies in µs
}

// OpsPerSecond is the arm's completed throughput over its blocks.
func (a *Arm) OpsPerSecond() float64 {
	if a.Elapsed <= 0 {
		return 0
	}
	return float64(a.Ops) / a.Elapsed.Seconds()
}

// Percentile is the arm's latency at p (0–100) in ms, over every measured
// block.
func (a *Arm) Percentile(p float64) float64 {
	all := make([]int, len(a.blocks))
	for i := range all {
		all[i] = i
	}
	return float64(quantile(a.blocks, all, p)) / 1000
}

// Held reports whether the arm held the rate: it sent at least 95% of the
// scheduled ops, at least 99% of them got a 2xx answer, and in no more
// than a quarter of its blocks did latency grow as a queue built up. When
// not, reason says why.
func (a *Arm) Held(rate float64) (ok bool, reason string) {
	switch {
	case a.Ops == 0:
		return false, fmt.Sprintf("arm %s sent no op", a.Name)
	case float64(a.Ops) < 0.95*float64(a.Scheduled):
		return false, fmt.Sprintf("arm %s sent %d of %d scheduled ops: the client or the API cannot keep up with %.0f ops/s", a.Name, a.Ops, a.Scheduled, rate)
	case float64(a.Acked) < 0.99*float64(a.Ops):
		return false, fmt.Sprintf("arm %s: %d of %d ops got no 2xx answer (first: %s)", a.Name, a.Ops-a.Acked, a.Ops, a.FirstError)
	case a.Growing*4 > len(a.blocks):
		return false, fmt.Sprintf("arm %s: latency grew within %d of %d blocks at %.0f ops/s: a queue builds up, the API is saturated", a.Name, a.Growing, len(a.blocks), rate)
	}
	return true, ""
}

// Result is an A/B run's figures.
type Result struct {
	Rate   float64
	Rounds int // measured rounds, each a block of A and a block of B
	A, B   *Arm
}

// Arms returns A and B.
func (r *Result) Arms() []*Arm { return []*Arm{r.A, r.B} }

// Held reports whether both arms held the rate, and the first reason one
// did not.
func (r *Result) Held() (bool, string) {
	for _, a := range r.Arms() {
		if ok, why := a.Held(r.Rate); !ok {
			return false, why
		}
	}
	return true, ""
}

// ErrNoAnswer is wrapped when a block got not one answer: the target is
// unreachable.
var ErrNoAnswer = errors.New("no answer")

// Plan is the rounds Run makes for opts.
func Plan(opts Options) (warmup, measured int, block time.Duration) {
	block = opts.Block
	if block <= 0 {
		block = DefaultBlock
	}
	measured = max(int((opts.Duration+block-1)/block), 2)
	warmup = int((opts.Warmup + block - 1) / block)
	return warmup, measured, block
}

// Ops estimates how many requests Run sends for opts: both arms, warm-up
// included.
func Ops(opts Options) int {
	w, m, block := Plan(opts)
	return int(2 * float64(w+m) * opts.Rate * block.Seconds())
}

// Run measures a against b: warm-up rounds, then measured rounds, each a
// block of each arm, in ABBA order. Faults, retries and replays of the
// scenarios are left out: each op is one request. It returns when every
// block has ended; a cancelled ctx returns ctx's error.
func Run(ctx context.Context, a, b *scenarios.Scenario, opts Options) (*Result, error) {
	if opts.Rate <= 0 {
		return nil, fmt.Errorf("rate %v: want ops per second > 0", opts.Rate)
	}
	if opts.Duration <= 0 {
		return nil, fmt.Errorf("duration %v: want > 0", opts.Duration)
	}
	warm, measured, block := Plan(opts)
	rng := opts.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(opts.Runner.Seed, 0xab7e57))
	}
	res := &Result{Rate: opts.Rate, Rounds: measured}
	res.A = &Arm{Name: "a", Scenario: a.Name, Hist: measure.NewHistogram()}
	res.B = &Arm{Name: "b", Scenario: b.Name, Hist: measure.NewHistogram()}
	arms := [2]struct {
		sc  *scenarios.Scenario
		arm *Arm
	}{{bare(a, opts.Rate, block, opts.MaxInFlight), res.A}, {bare(b, opts.Rate, block, opts.MaxInFlight), res.B}}
	for round := -warm; round < measured; round++ {
		order := []int{0, 1}
		if (round+warm)%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			ro := opts.Runner
			ro.KeyNonce = rng.Uint64() | 1
			h, err := runner.Run(ctx, arms[i].sc, ro)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, fmt.Errorf("arm %s: %w", arms[i].arm.Name, err)
			}
			if round >= 0 {
				arms[i].arm.add(h, opts.Rate, block)
			}
			if opts.OnBlock != nil {
				opts.OnBlock(round, arms[i].arm.Name)
			}
		}
	}
	return res, nil
}

// bare is sc as one arm's block: no faults, one attempt, no replay, the
// open model at rate for d.
func bare(sc *scenarios.Scenario, rate float64, d time.Duration, inFlight int) *scenarios.Scenario {
	c := *sc
	c.Faults = nil
	c.Retry.Attempts = 1
	c.Operation.Replay = nil
	if inFlight <= 0 {
		inFlight = DefaultMaxInFlight
	}
	c.Load = scenarios.Load{Rate: scenarios.Rate(rate), Duration: scenarios.Duration(d), MaxInFlight: inFlight, RequestTimeout: sc.Load.RequestTimeout}
	return &c
}

// add records one block's history.
func (a *Arm) add(h *history.History, rate float64, d time.Duration) {
	var lat []int64 // in op order: intended start order
	for op := range h.Ops {
		as := h.AttemptsOf(op)
		if len(as) == 0 {
			continue
		}
		a.Ops++
		if history.State(as) != history.Acked {
			if a.FirstError == "" {
				a.FirstError = describe(as[len(as)-1])
			}
			continue
		}
		a.Acked++
		l := history.OpLatency(as)
		measure.Record(a.Hist, l)
		lat = append(lat, max(l.Microseconds(), 1))
	}
	if growing(lat) {
		a.Growing++
	}
	slices.Sort(lat)
	a.blocks = append(a.blocks, lat)
	a.Scheduled += int(rate * d.Seconds())
	a.Elapsed += d
}

// growing reports whether latencies (µs, in intended start order) grow
// from the block's first quarter to its last.
func growing(lat []int64) bool {
	q := len(lat) / 4
	if q < 3 {
		return false
	}
	med := func(xs []int64) int64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	return med(lat[len(lat)-q:]) > 2*med(lat[:q])+2000
}

func describe(at history.Attempt) string {
	if at.Err != "" {
		return at.Err
	}
	return fmt.Sprintf("status %d", at.Status)
}

// WriteHGRM writes the arm's latency distribution as an HdrHistogram
// percentile file (.hgrm), values in ms, for the standard plotter.
func (a *Arm) WriteHGRM(w io.Writer) error {
	_, err := a.Hist.PercentilesPrint(w, 5, 1000)
	return err
}
