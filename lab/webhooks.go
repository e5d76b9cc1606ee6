package lab

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/idemcheck/idemcheck/webhooks"
)

// WebhookSecret is the lab's default webhook signing secret (Standard
// Webhooks' form: whsec_ and the base64 of the key). It is a test
// fixture, known to anyone; a scenario reads it from the environment
// (IDEMCHECK_LAB_WEBHOOK_SECRET), as it would a real one.
const WebhookSecret = "whsec_aWRlbWNoZWNrLWxhYi13ZWJob29rLXNpZ25pbmc="

// WebhookPrincipal owns the charges webhook events make: their keys are
// the events' ids, scoped apart from the API's users.
const WebhookPrincipal = "webhook"

// webhookEvent is a delivery's body: a payment event whose data is a
// charge to record.
type webhookEvent struct {
	Type string `json:"type"`
	Data struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
		Customer string `json:"customer"`
	} `json:"data"`
}

// handleWebhook receives Standard Webhooks deliveries of payment events:
// it verifies the signature over the raw body and the timestamp first
// (400 when either is wrong: no effect), then records the event's charge
// once per event id (webhook-id), in the same transaction as the id, and
// answers a redelivery 2xx with the first answer. The naive receiver
// verifies, then charges every delivery.
func (s *Server) handleWebhook(naive bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(w, r)
		if err != nil {
			problem(w, http.StatusBadRequest, "invalid webhook", err.Error())
			return
		}
		verr := s.webhook.Verify(r.Header, body, s.cfg.Clock(), webhooks.DefaultTolerance)
		late := s.bugs[BugWebhookEffectBeforeVerify] && !naive
		if verr != nil && s.bugs[BugWebhookDedupeBeforeVerify] && !naive && s.replayUnverified(w, r, body) {
			return
		}
		if verr != nil && !late {
			problem(w, http.StatusBadRequest, "invalid webhook", verr.Error())
			return
		}
		id := r.Header.Get("webhook-id")
		if err := storableText("webhook-id", id); err != nil {
			problem(w, http.StatusBadRequest, "invalid webhook", err.Error())
			return
		}
		if ce, ok := customerEvent(body); ok && verr == nil {
			s.applyCustomerEvent(w, r, id, ce, naive)
			return
		}
		req, fp, err := webhookCharge(body)
		if err != nil {
			problem(w, http.StatusBadRequest, "invalid webhook", err.Error())
			return
		}
		ctx := context.WithoutCancel(r.Context())
		op := s.newChargeOp(WebhookPrincipal, id, req, fp)
		if s.bugs[BugWebhookDedupeBySignature] && !naive {
			// the event's charge keeps its id; the record it is
			// deduplicated under is the delivery's signature
			sig := r.Header.Get("webhook-signature")
			if err := storableText("webhook-signature", sig); err != nil {
				problem(w, http.StatusBadRequest, "invalid webhook", err.Error())
				return
			}
			op.id.Key, op.forward = "signature:"+sig, false
			op.ck = cacheKey(op.id)
		}
		switch {
		case late && verr != nil:
			s.log.Warn("seeded bug: a webhook event applied before its signature was verified", "bug", BugWebhookEffectBeforeVerify)
			s.chargeOnce(ctx, discard{}, op)
			problem(w, http.StatusBadRequest, "invalid webhook", verr.Error())
		case naive:
			s.chargeOnce(ctx, w, op)
		case s.bugs[BugWebhookIDAfterEffect]:
			s.chargeCheckThenAct(ctx, w, op)
		case s.bugs[BugWebhook500OnRedelivery]:
			rows, err := s.ledger.ChargesByKey(ctx, id)
			if err != nil {
				s.unavailable(w, "look up the event", err)
				return
			}
			if len(rows) > 0 {
				s.log.Warn("seeded bug: a redelivery of an applied event answered 500", "bug", BugWebhook500OnRedelivery)
				problem(w, http.StatusInternalServerError, "internal error", "duplicate key value violates unique constraint \"webhook_events_pkey\"")
				return
			}
			s.chargeProtected(ctx, w, op)
		default:
			s.chargeProtected(ctx, w, op)
		}
	}
}

// webhookCharge is the charge a payment event records, and the
// fingerprint of its canonical body.
func webhookCharge(body []byte) (chargeRequest, string, error) {
	canon, _, err := canonical(body)
	if err != nil {
		return chargeRequest{}, "", err
	}
	var ev webhookEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return chargeRequest{}, "", errors.New("the event must be a JSON object: {\"type\":\"payment.succeeded\",\"data\":{\"amount\":100,\"currency\":\"usd\"}}")
	}
	req := chargeRequest{Amount: ev.Data.Amount, Currency: ev.Data.Currency, Customer: ev.Data.Customer}
	switch {
	case ev.Type == "":
		return req, "", errors.New("the event has no type")
	case req.Amount <= 0:
		return req, "", errors.New("data.amount must be a positive integer")
	case !isCurrency(req.Currency):
		return req, "", errors.New("data.currency must be a 3-letter code")
	}
	if err := storableText("data.customer", req.Customer); err != nil {
		return req, "", err
	}
	return req, fingerprint("POST /webhooks", canon), nil
}

// discard is a ResponseWriter whose answer goes nowhere: the answer of a
// charge the effect-before-verify bug makes before it refuses.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// customerUpdated is a customer.updated event: it sets the customer's
// name, and created orders it among the customer's events (a provider's
// event time; the newest must win whatever order deliveries arrive in).
type customerUpdated struct {
	Type    string `json:"type"`
	Created *int64 `json:"created"`
	Data    struct {
		Object struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"object"`
	} `json:"data"`
}

// customerEvent decodes body as a customer event; ok false when it is not
// one (its type does not start with "customer.").
func customerEvent(body []byte) (customerUpdated, bool) {
	var ev customerUpdated
	if err := json.Unmarshal(body, &ev); err != nil || !strings.HasPrefix(ev.Type, "customer.") {
		return ev, false
	}
	return ev, true
}

// applyCustomerEvent applies a verified customer event: the protected
// receiver records its id with the change, in one transaction, and
// changes the customer only for a newer event (an older one arriving late
// is acknowledged and ignored); the naive receiver, and the
// webhook-ignores-order bug, let whatever arrives last win.
func (s *Server) applyCustomerEvent(w http.ResponseWriter, r *http.Request, id string, ev customerUpdated, naive bool) {
	o := ev.Data.Object
	switch {
	case ev.Created == nil:
		problem(w, http.StatusBadRequest, "invalid webhook", "a customer event needs created, the time that orders it: {\"created\":1700000000}")
		return
	case o.ID == "":
		problem(w, http.StatusBadRequest, "invalid webhook", "a customer event needs data.object.id")
		return
	}
	for _, f := range []struct{ name, v string }{{"data.object.id", o.ID}, {"data.object.name", o.Name}} {
		if err := storableText(f.name, f.v); err != nil {
			problem(w, http.StatusBadRequest, "invalid webhook", err.Error())
			return
		}
	}
	ordered := !naive && !s.bugs[BugWebhookIgnoresOrder]
	if !ordered && !naive {
		s.log.Warn("seeded bug: a customer event applied whatever its order", "bug", BugWebhookIgnoresOrder)
	}
	_, c, err := s.ledger.ApplyCustomerEvent(context.WithoutCancel(r.Context()), id, o.ID, *ev.Created, o.Name, !naive, ordered)
	if err != nil {
		s.unavailable(w, "apply the event", err)
		return
	}
	encode(w, http.StatusOK, customerView(c))
}

// customerJSON is a customer as the lab shows it.
type customerJSON struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version int64  `json:"version"`
}

func customerView(c Customer) customerJSON { return customerJSON(c) }

// handleCustomerGet answers GET /customers/{id}: the customer as its
// newest applied event set it, 404 for one no event set.
func (s *Server) handleCustomerGet() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := storableText("id", id); err != nil {
			problem(w, http.StatusBadRequest, "invalid customer id", err.Error())
			return
		}
		c, ok, err := s.ledger.Customer(r.Context(), id)
		switch {
		case err != nil:
			s.unavailable(w, "read the customer", err)
		case !ok:
			problem(w, http.StatusNotFound, "no such customer", "no customer event named "+id)
		default:
			encode(w, http.StatusOK, customerView(c))
		}
	}
}

// replayUnverified is the webhook-dedupe-before-verify bug: a delivery
// whose event id is already applied is answered the stored answer before
// its signature is looked at, forged or not. It reports whether it
// answered.
func (s *Server) replayUnverified(w http.ResponseWriter, r *http.Request, body []byte) bool {
	id := r.Header.Get("webhook-id")
	if storableText("webhook-id", id) != nil {
		return false
	}
	req, fp, err := webhookCharge(body)
	if err != nil {
		return false
	}
	ctx := context.WithoutCancel(r.Context())
	rows, err := s.ledger.ChargesByKey(ctx, id)
	if err != nil || len(rows) == 0 {
		return false
	}
	s.log.Warn("seeded bug: a known webhook event answered before its signature was verified", "bug", BugWebhookDedupeBeforeVerify)
	s.chargeProtected(ctx, w, s.newChargeOp(WebhookPrincipal, id, req, fp))
	return true
}
