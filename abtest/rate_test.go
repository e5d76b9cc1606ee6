package abtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"200": 200, "200/s": 200, "0.5": 0.5} {
		if got, auto, err := ParseRate(in); got != want || auto || err != nil {
			t.Errorf("ParseRate(%q) = %v, %v, %v; want %v", in, got, auto, err, want)
		}
	}
	if _, auto, err := ParseRate("auto"); !auto || err != nil {
		t.Errorf("ParseRate(auto) = %v, %v; want auto", auto, err)
	}
	for _, bad := range []string{"", "0", "-1", "fast", "+Inf", "200/m"} {
		if _, _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = nil error, want one", bad)
		}
	}
}

// FindRates searches arm A then arm B and benches at half the lower rate;
// the arms' percentile files land in a directory it makes.
func TestFindRatesAndHGRMFiles(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	a := &scenarios.Scenario{Name: "a", Operation: scenarios.Operation{Request: scenarios.Request{Method: "POST", Path: "/x"}, Key: scenarios.KeyPlace{Header: "Idempotency-Key"}}}
	b := &scenarios.Scenario{Name: "b", Operation: scenarios.Operation{Request: scenarios.Request{Method: "POST", Path: "/x"}, Key: scenarios.KeyPlace{None: true}}}
	var arms []string
	maxA, maxB, rate, err := FindRates(context.Background(), a, b, RateOptions{Start: 50, Max: 50, Probe: 100 * time.Millisecond, Runner: runner.Options{Target: u, Seed: 1}},
		func(arm string) { arms = append(arms, arm) })
	if err != nil || maxA != 50 || maxB != 50 || rate != 25 || strings.Join(arms, "") != "AB" {
		t.Errorf("FindRates = %v, %v, %v, %v, heard %q; want 50, 50, 25, nil, AB", maxA, maxB, rate, err, arms)
	}

	res, err := Run(context.Background(), a, b, Options{Rate: 50, Duration: 200 * time.Millisecond, Block: 100 * time.Millisecond, Runner: runner.Options{Target: u, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bench")
	if err := res.WriteHGRMFiles(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.hgrm", "b.hgrm"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || !strings.Contains(string(b), "Percentile") {
			t.Errorf("%s: %v\n%.200s", f, err, b)
		}
	}
}

// AutoOps counts both arms' searches and the A/B at half the search's cap.
func TestAutoOps(t *testing.T) {
	o := Options{Rate: 100, Duration: 2 * time.Second, Warmup: 500 * time.Millisecond}
	if got, want := AutoOps(o, RateOptions{}), 2*Probes(RateOptions{})+2*5*MaxProbeRate/4; got != want {
		t.Errorf("AutoOps = %d, want %d (2 searches, then 2 arms × 2.5s × %d/s)", got, want, MaxProbeRate/2)
	}
}
