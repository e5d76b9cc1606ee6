package abtest

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

func TestQuantileMatchesSortedUnion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	blocks := make([][]int64, 7)
	for i := range blocks {
		for range rng.IntN(50) {
			blocks[i] = append(blocks[i], 1+rng.Int64N(5000))
		}
		slices.Sort(blocks[i])
	}
	for _, picked := range [][]int{{0, 1, 2, 3, 4, 5, 6}, {3, 3, 1}, {6}, {2, 2, 2, 2}} {
		var all []int64
		for _, i := range picked {
			all = append(all, blocks[i]...)
		}
		slices.Sort(all)
		for _, p := range []float64{0, 1, 50, 90, 99, 99.9, 100} {
			if len(all) == 0 {
				continue
			}
			rank := max(int(math.Ceil(p/100*float64(len(all)))), 1)
			if got, want := quantile(blocks, picked, p), all[rank-1]; got != want {
				t.Errorf("quantile(%v, p%v) = %d, want %d", picked, p, got, want)
			}
		}
	}
	if got := quantile([][]int64{nil}, []int{0}, 50); got != 0 {
		t.Errorf("quantile of nothing = %d, want 0", got)
	}
}

// synthetic makes a result whose A is B shifted by shift µs, with noise.
func synthetic(rounds int, shift int64) *Result {
	rng := rand.New(rand.NewPCG(7, 7))
	r := &Result{Rate: 100, Rounds: rounds, A: &Arm{Name: "a"}, B: &Arm{Name: "b"}}
	for range rounds {
		var a, b []int64
		for range 200 {
			base := 1000 + rng.Int64N(200)
			b = append(b, base)
			a = append(a, 1000+rng.Int64N(200)+shift)
		}
		slices.Sort(a)
		slices.Sort(b)
		r.A.blocks = append(r.A.blocks, a)
		r.B.blocks = append(r.B.blocks, b)
	}
	return r
}

func TestCompareFindsAShift(t *testing.T) {
	ds := Compare(synthetic(20, 500), 300, rand.New(rand.NewPCG(1, 1)))
	p50 := ds[0]
	if p50.Name != "p50" || math.Abs(p50.MS-0.5) > 0.02 {
		t.Fatalf("Compare(A = B + 0.5ms).p50 = %+v, want Δ ≈ 0.5ms", p50)
	}
	if !(p50.CI[0] <= p50.MS && p50.MS <= p50.CI[1]) || p50.CI[1]-p50.CI[0] > 0.05 {
		t.Errorf("p50 CI = %v, want a narrow interval around %v", p50.CI, p50.MS)
	}
	if math.Abs(p50.Pct-45) > 3 {
		t.Errorf("p50 Δ%% = %v, want ≈ 45%% (0.5ms over 1.1ms)", p50.Pct)
	}
	if v, _ := Judge(ds, Budget{{Name: "p50", Value: 0.1}}); v != Exceeded {
		t.Errorf("Judge(Δp50 0.5ms, budget 0.1ms) = %s, want exceeded", v)
	}
	if v, _ := Judge(ds, Budget{{Name: "p50", Value: 80, Pct: true}}); v != Within {
		t.Errorf("Judge(Δp50 45%%, budget 80%%) = %s, want within", v)
	}
	if v, _ := Judge(ds, Budget{{Name: "p50", Value: p50.MS}}); v != Unclear {
		t.Errorf("Judge(budget = the estimate) = %s, want unclear", v)
	}
	if v, fs := Judge(ds, nil); v != Within || len(fs) != 0 {
		t.Errorf("Judge(no budget) = %s %v, want within and no finding", v, fs)
	}
}

func TestCompareNoShiftStraddlesZero(t *testing.T) {
	ds := Compare(synthetic(20, 0), 300, rand.New(rand.NewPCG(1, 1)))
	for _, d := range ds[:2] {
		if d.CI[0] > 0 || d.CI[1] < 0 {
			t.Errorf("%s: CI %v of two equal arms excludes 0", d.Name, d.CI)
		}
	}
}

func TestParseBudget(t *testing.T) {
	got, err := ParseBudget("p50=30%,p99=5ms, p999=500us")
	want := Budget{{"p50", 30, true}, {"p99", 5, false}, {"p999", 0.5, false}}
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("ParseBudget = %v, %v; want %v", got, err, want)
	}
	if got[0].String() != "p50=30%" || got[1].String() != "p99=5ms" {
		t.Errorf("String() = %s %s", got[0], got[1])
	}
	for _, bad := range []string{"p50", "p75=3ms", "p50=fast", "p50=-3%", "p50=1ms,p50=2ms"} {
		if _, err := ParseBudget(bad); err == nil {
			t.Errorf("ParseBudget(%q) = nil error, want one", bad)
		}
	}
}

func TestPlanAndOps(t *testing.T) {
	o := Options{Rate: 100, Duration: 2 * time.Second, Warmup: 500 * time.Millisecond}
	w, m, b := Plan(o)
	if w != 1 || m != 4 || b != DefaultBlock {
		t.Errorf("Plan = %d, %d, %v; want 1 warm-up, 4 measured, %v", w, m, b, DefaultBlock)
	}
	if got := Ops(o); got != 500 {
		t.Errorf("Ops = %d, want 500 (2 arms × 2.5s × 100/s)", got)
	}
}

// TestRunInterleaves runs a short A/B against a handler and checks the
// bookkeeping (no timing: that is the long validation's job).
func TestRunInterleaves(t *testing.T) {
	t.Parallel()
	var order strings.Builder
	var keyed, bare atomic.Int64
	keys := map[string]bool{}
	keyc := make(chan string, 10000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := r.Header.Get("Idempotency-Key"); k != "" {
			keyed.Add(1)
			keyc <- k
		} else {
			bare.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	a := &scenarios.Scenario{Name: "a", Operation: scenarios.Operation{Request: scenarios.Request{Method: "POST", Path: "/x"}, Key: scenarios.KeyPlace{Header: "Idempotency-Key"}}}
	b := &scenarios.Scenario{Name: "b", Operation: scenarios.Operation{Request: scenarios.Request{Method: "POST", Path: "/x"}, Key: scenarios.KeyPlace{None: true}}}
	res, err := Run(context.Background(), a, b, Options{
		Rate: 200, Duration: 200 * time.Millisecond, Block: 100 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Runner:  runner.Options{Target: u, Seed: 1},
		OnBlock: func(round int, arm string) { order.WriteString(arm) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := order.String(); got != "abbaab" {
		t.Errorf("block order = %s, want abbaab (ABBA, warm-up first)", got)
	}
	if res.Rounds != 2 || len(res.A.blocks) != 2 || res.A.Scheduled != 40 {
		t.Errorf("rounds %d, blocks %d, scheduled %d; want 2, 2, 40", res.Rounds, len(res.A.blocks), res.A.Scheduled)
	}
	if keyed.Load() == 0 || bare.Load() == 0 || res.A.Acked == 0 || res.B.Acked == 0 {
		t.Errorf("keyed %d bare %d acked %d/%d: want both arms sent and answered", keyed.Load(), bare.Load(), res.A.Acked, res.B.Acked)
	}
	close(keyc)
	for k := range keyc {
		if keys[k] {
			t.Errorf("key %s sent twice: every op needs a fresh key", k)
		}
		keys[k] = true
		if len(k) != 36 || k[14] != '4' {
			t.Errorf("key %q is not a UUID v4", k)
		}
	}
	var buf bytes.Buffer
	if err := res.A.WriteHGRM(&buf); err != nil || !strings.Contains(buf.String(), "Percentile") {
		t.Errorf("WriteHGRM: %v\n%s", err, buf.String())
	}
}
