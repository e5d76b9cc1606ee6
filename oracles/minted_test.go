package oracles

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/history"
)

// mintedAt is an attempt whose answer carried the key k the server minted.
func mintedAt(status int, k string) history.Attempt {
	a := ok(status)
	a.Fields = map[string]string{history.MintedKeyField: k}
	return a
}

// TestMintedKeysCount: the effects a server recorded under keys it minted
// (operation.key.from_answer) count for the op whose answers carried them,
// with those under the op's own key; the effects of a key no answer
// carried stay a stranger's. Per key and in bulk alike.
func TestMintedKeysCount(t *testing.T) {
	counts := map[string]int{"mk-1": 1, "mk-2": 1, "k2": 1, "mk-3": 1, "mk-9": 1}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := r.URL.Query().Get("k"); k != "" {
			_ = json.NewEncoder(w).Encode(map[string]int{"n": counts[k]})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"counts": map[string]int{}})
	}))
	t.Cleanup(srv.Close)
	// Op c0 sent no key: its first answer (hidden by a drop_ack) minted
	// mk-1, its retry mk-2. Op k2 sent its own key, which the server
	// kept, and was answered mk-3.
	lostMinted := lost()
	lostMinted.Answers = []history.Answer{{Hidden: true, Outcome: history.OK, Status: 201, Fields: map[string]string{history.MintedKeyField: "mk-1"}}}
	h := hist(o("c0", lostMinted, mintedAt(201, "mk-2")), o("k2", mintedAt(201, "mk-3")))

	keys, m, err := effectKeys(h)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c0", "k2", "mk-1", "mk-2", "mk-3"}, keys); diff != "" {
		t.Errorf("effectKeys keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(minted{"mk-1": "c0", "mk-2": "c0", "mk-3": "k2"}, m); diff != "" {
		t.Errorf("effectKeys owners (-want +got):\n%s", diff)
	}

	perKey := &HTTPEffects{OracleName: "ledger", PerKey: get(srv.URL, "/count?k={key}"), Value: "$.n"}
	r, err := perKey.Observe(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"c0": 2, "k2": 2}, r.Effects); diff != "" {
		t.Errorf("per key effects (-want +got):\n%s", diff)
	}

	all, err := (minted{"mk-1": "c0"}).fold(&history.Reading{Effects: map[string]int{"mk-1": 1, "c0": 1, "x": 1}, EffectsBefore: map[string]int{"mk-1": 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&history.Reading{Effects: map[string]int{"c0": 2, "x": 1}, EffectsBefore: map[string]int{"c0": 1}}, all); diff != "" {
		t.Errorf("fold (-want +got):\n%s", diff)
	}
}
