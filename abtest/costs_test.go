package abtest

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/runner"
)

// Costs measures each distinct protected/naive pair of requests once and
// leaves out the pairs whose ops need a setup or a read first.
func TestCosts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	o := Options{Rate: 100, Duration: 200 * time.Millisecond, Block: 100 * time.Millisecond,
		Runner: runner.Options{Target: u, Seed: 1}, Rand: rand.New(rand.NewPCG(1, 2))}
	costs := Costs(context.Background(), []string{"charges-lost-ack", "charges-timeout", "debit-cas", "likes-duplicate"}, o, 50, 1)
	var whats []string
	for _, c := range costs {
		whats = append(whats, c.What)
		if c.A == nil || c.B == nil || len(c.Deltas) == 0 {
			t.Errorf("cost of %s: arms %v, %v, %d deltas; want both arms measured and their deltas (err %q)", c.What, c.A, c.B, len(c.Deltas), c.Err)
		}
	}
	if len(costs) != 2 || costs[0].What != "POST /charges vs POST /naive/charges" {
		t.Errorf("Costs measured %q; want the charges once and the likes, not the debit", whats)
	}
}
