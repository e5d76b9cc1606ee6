package lab

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/webhooks"
)

// deliver sends a Standard Webhooks delivery of event id to path, signed
// with the lab's secret (or forged).
func deliver(tl *testLab, path, id string, f webhooks.Forgery) *httptest.ResponseRecorder {
	s, _ := webhooks.New("standard", WebhookSecret, webhooks.Custom{})
	body := `{"type":"payment.succeeded","data":{"amount":100,"currency":"usd","customer":"cus_1"}}`
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	s.Sign(r.Header, id, tl.clock.Now(), []byte(body), f)
	w := httptest.NewRecorder()
	tl.ServeHTTP(w, r)
	return w
}

// TestWebhookReceivers: the protected receiver verifies every delivery
// before it applies it and applies an event once, answering every
// redelivery as the first; the naive one applies each delivery; each
// webhook bug changes what a probe sees.
func TestWebhookReceivers(t *testing.T) {
	t.Parallel()
	probe := func(t *testing.T, tl *testLab, path string) string {
		forged := deliver(tl, path, "evt_forged", webhooks.BadSignature)
		stale := deliver(tl, path, "evt_stale", webhooks.Stale)
		first := deliver(tl, path, "evt_1", webhooks.Genuine)
		again := deliver(tl, path, "evt_1", webhooks.Genuine) // the same second: the same signature
		tl.clock.Advance(time.Second)
		later := deliver(tl, path, "evt_1", webhooks.Genuine) // signed anew
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() { defer wg.Done(); deliver(tl, path, "evt_2", webhooks.Genuine) }()
		}
		wg.Wait()
		return fmt.Sprintf("forged=%d/%d stale=%d/%d first=%d again=%d later=%d evt_1=%d evt_2=%d", forged.Code, tl.ledgerCount(t, "evt_forged"),
			stale.Code, tl.ledgerCount(t, "evt_stale"), first.Code, again.Code, later.Code, tl.ledgerCount(t, "evt_1"), tl.ledgerCount(t, "evt_2"))
	}
	for _, c := range []struct {
		name, path, bug string
		want            string
	}{
		{"protected", "/webhooks", "", "forged=400/0 stale=400/0 first=201 again=201 later=201 evt_1=1 evt_2=1"},
		{"naive", "/naive/webhooks", "", "forged=400/0 stale=400/0 first=201 again=201 later=201 evt_1=3 evt_2=8"},
		{"500 on redelivery", "/webhooks", BugWebhook500OnRedelivery, "forged=400/0 stale=400/0 first=201 again=500 later=500 evt_1=1 evt_2=1"},
		{"effect before verify", "/webhooks", BugWebhookEffectBeforeVerify, "forged=400/1 stale=400/1 first=201 again=201 later=201 evt_1=1 evt_2=1"},
		{"dedupe by signature", "/webhooks", BugWebhookDedupeBySignature, "forged=400/0 stale=400/0 first=201 again=201 later=201 evt_1=2 evt_2=1"},
		// forged deliveries of new events are refused as ever
		{"dedupe before verify", "/webhooks", BugWebhookDedupeBeforeVerify, "forged=400/0 stale=400/0 first=201 again=201 later=201 evt_1=1 evt_2=1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{}
			if c.bug != "" {
				cfg.Bugs = []string{c.bug}
			}
			if got := probe(t, newTestLab(t, cfg), c.path); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
	// a forged redelivery of an applied event: refused, unless the id is
	// looked up before the signature
	for _, bug := range []string{"", BugWebhookDedupeBeforeVerify} {
		cfg := Config{}
		if bug != "" {
			cfg.Bugs = []string{bug}
		}
		tl := newTestLab(t, cfg)
		deliver(tl, "/webhooks", "evt_7", webhooks.Genuine)
		want := 400
		if bug != "" {
			want = 201
		}
		if w := deliver(tl, "/webhooks", "evt_7", webhooks.BadSignature); w.Code != want || tl.ledgerCount(t, "evt_7") != 1 {
			t.Errorf("bug %q: a forged redelivery of an applied event: %d, %d charges; want %d, 1", bug, w.Code, tl.ledgerCount(t, "evt_7"), want)
		}
	}
	// concurrent deliveries of one event, with the id recorded after the
	// charge: more than one applies
	tl := newTestLab(t, Config{Bugs: []string{BugWebhookIDAfterEffect}, ProcessorLatency: 30 * time.Millisecond})
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); deliver(tl, "/webhooks", "evt_9", webhooks.Genuine) }()
	}
	wg.Wait()
	if n := tl.ledgerCount(t, "evt_9"); n < 2 {
		t.Errorf("%s: 10 concurrent deliveries applied %d times, want more than once", BugWebhookIDAfterEffect, n)
	}
}

// deliverEvent sends a Standard Webhooks delivery of event id with body.
func deliverEvent(tl *testLab, path, id, body string) *httptest.ResponseRecorder {
	s, _ := webhooks.New("standard", WebhookSecret, webhooks.Custom{})
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	s.Sign(r.Header, id, tl.clock.Now(), []byte(body), webhooks.Genuine)
	w := httptest.NewRecorder()
	tl.ServeHTTP(w, r)
	return w
}

// TestCustomerEventsOrder: customer events delivered newest first: the
// protected receiver keeps the newest state (the late older event
// acknowledged, ignored), the naive receiver and webhook-ignores-order let
// the last delivery win.
func TestCustomerEventsOrder(t *testing.T) {
	t.Parallel()
	event := func(v int) string {
		return fmt.Sprintf(`{"type":"customer.updated","created":%d,"data":{"object":{"id":"cus_1","name":"v%d"}}}`, v, v)
	}
	for _, c := range []struct {
		name, path, bug string
		want            string
	}{
		{"protected", "/webhooks", "", `200 200 200 {"id":"cus_1","name":"v3","version":3}`},
		{"ignores order", "/webhooks", BugWebhookIgnoresOrder, `200 200 200 {"id":"cus_1","name":"v1","version":1}`},
		{"naive", "/naive/webhooks", "", `200 200 200 {"id":"cus_1","name":"v1","version":1}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{}
			if c.bug != "" {
				cfg.Bugs = []string{c.bug}
			}
			tl := newTestLab(t, cfg)
			a := deliverEvent(tl, c.path, "evt_3", event(3))
			b := deliverEvent(tl, c.path, "evt_1", event(1)) // late
			again := deliverEvent(tl, c.path, "evt_3", event(3))
			if c.name == "naive" {
				// the naive receiver applies the redelivery too: it is last
				again = deliverEvent(tl, c.path, "evt_1", event(1))
			}
			rr := httptest.NewRecorder()
			tl.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/customers/cus_1", nil))
			got := rr.Body.String()
			if s := fmt.Sprintf("%d %d %d %s", a.Code, b.Code, again.Code, strings.TrimSpace(got)); s != c.want {
				t.Errorf("got  %s\nwant %s", s, c.want)
			}
		})
	}
	tl := newTestLab(t, Config{})
	if w := deliverEvent(tl, "/webhooks", "evt_x", `{"type":"customer.updated","data":{"object":{"id":"cus_2"}}}`); w.Code != 400 || !strings.Contains(w.Body.String(), "created") {
		t.Errorf("an event without created: %d %s, want 400 naming created", w.Code, w.Body)
	}
	r := httptest.NewRequest(http.MethodGet, "/customers/cus_none", nil)
	w := httptest.NewRecorder()
	tl.ServeHTTP(w, r)
	if w.Code != 404 {
		t.Errorf("GET /customers/cus_none = %d, want 404", w.Code)
	}
}
