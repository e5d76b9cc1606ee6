package runner

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/webhooks"
)

// Every attempt of a webhook operation is a delivery signed as its
// provider signs one: the receiver verifies each, retries included, and
// every delivery of an op carries the op's key as its event id.
func TestWebhookDeliveriesAreSigned(t *testing.T) {
	const secret = "whsec_c2VjcmV0LWtleS1ieXRlcw=="
	for _, profile := range []string{"standard", "stripe", "github", "shopify"} {
		t.Run(profile, func(t *testing.T) {
			verifier, err := webhooks.New(profile, secret, webhooks.Custom{})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			ids := map[string]int{}     // event id → deliveries
			sigs := map[string]string{} // event id → its first delivery's signature
			resigned := 0               // redeliveries whose signature differs from the first's
			bad := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				defer mu.Unlock()
				if err := verifier.Verify(r.Header, body, time.Now(), webhooks.DefaultTolerance); err != nil {
					bad++
					w.WriteHeader(400)
					return
				}
				id := r.Header.Get(verifier.IDHeader())
				if profile == "stripe" {
					var ev struct{ ID string }
					_ = json.Unmarshal(body, &ev)
					id = ev.ID
				}
				ids[id]++
				sig := r.Header.Get(verifier.SignatureHeader())
				if ids[id] == 1 {
					sigs[id] = sig
				} else if sig != sigs[id] {
					resigned++
				}
				if ids[id] == 1 {
					w.WriteHeader(500) // the first delivery fails: redelivered
					return
				}
				w.WriteHeader(200)
			}))
			defer srv.Close()
			sc := scenario(func(sc *scenarios.Scenario) {
				sc.Operation.Key = scenarios.KeyPlace{Header: verifier.IDHeader()}
				if profile == "stripe" {
					sc.Operation.Key = scenarios.KeyPlace{BodyField: "id"}
				}
				sc.Operation.Body = `{"id":"{{.Key}}","type":"payment.succeeded"}`
				sc.Operation.Webhook = &scenarios.Webhook{Profile: profile, Secret: `{{env "WHSEC"}}`}
				sc.Load = scenarios.Load{Ops: 6, Concurrency: 2, MaxInFlight: 64}
			})
			u, _ := url.Parse(srv.URL)
			h, err := Run(runCtx(t), sc, Options{Target: u, Env: func(k string) string {
				if k == "WHSEC" {
					return secret
				}
				return ""
			}})
			if err != nil {
				t.Fatal(err)
			}
			if bad > 0 {
				t.Errorf("%d deliveries failed verification", bad)
			}
			for _, op := range h.Ops {
				if ids[op.Key] != 2 {
					t.Errorf("event %s delivered %d times, want 2 (a 500, then its redelivery)", op.Key, ids[op.Key])
				}
			}
			// each redelivery is signed anew, a second later, even when it
			// follows the first within the same second (github and shopify
			// sign the body alone: their signature never changes)
			if want := len(h.Ops); verifier.Timed() && resigned != want {
				t.Errorf("%d of %d redeliveries carried a new signature, want all", resigned, want)
			}
		})
	}
}
