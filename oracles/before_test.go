package oracles

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/history"
)

// A bulk oracle reads every key before the load: the reading after names
// the run's keys' earlier effects and counts keys the run never sent that
// gained effects.
func TestBulkReadsBefore(t *testing.T) {
	var phase atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counts := map[string]int{"old": 1, "k1": 1}
		if phase.Load() == 1 {
			counts = map[string]int{"old": 1, "k1": 2, "k2": 1, "other": 3}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"counts": counts})
	}))
	t.Cleanup(srv.Close)
	o := &HTTPEffects{OracleName: "ledger", Bulk: get(srv.URL, "/counts"), Value: "$.counts"}
	if err := o.Before(context.Background()); err != nil {
		t.Fatal(err)
	}
	phase.Store(1)
	r, err := o.Observe(context.Background(), keysHistory("k1", "k2"))
	if err != nil {
		t.Fatal(err)
	}
	want := &history.Reading{Oracle: "ledger", Kind: history.KindEffects,
		Effects: map[string]int{"k1": 2, "k2": 1}, EffectsBefore: map[string]int{"k1": 1},
		Strangers: 1, StrangerKeys: []string{"other"}}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("Observe after Before (-want +got):\n%s", diff)
	}
}
