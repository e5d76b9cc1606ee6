package lab

import (
	"net/http"
	"time"
)

// chargeJSON is a charge as the API shows it: the 201 body (no key) and a
// ledger row (with its key).
type chargeJSON struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency"`
	Customer       string `json:"customer"`
	Status         string `json:"status"`
	Created        string `json:"created"`
}

func chargeView(ch Charge, withKey bool) chargeJSON {
	v := chargeJSON{
		ID:       ch.ID,
		Amount:   ch.Amount,
		Currency: ch.Currency,
		Customer: ch.Customer,
		Status:   ch.Status,
		Created:  ch.Created.UTC().Format(time.RFC3339),
	}
	if withKey {
		v.IdempotencyKey = ch.IdempotencyKey
	}
	return v
}

// processorChargeJSON is a real charge at the processor.
type processorChargeJSON struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotency_key"`
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency"`
	Customer       string `json:"customer"`
	Created        string `json:"created"`
}

func (s *Server) handleChargesList() http.HandlerFunc {
	type answer struct {
		IdempotencyKey string       `json:"idempotency_key"`
		Count          int          `json:"count"`
		Charges        []chargeJSON `json:"charges"`
	}
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("idempotency_key")
		if key == "" {
			problem(w, http.StatusBadRequest, "missing idempotency_key", "GET /charges needs ?idempotency_key=K")
			return
		}
		if err := storableText("idempotency_key", key); err != nil {
			problem(w, http.StatusBadRequest, "invalid idempotency_key", err.Error())
			return
		}
		rows, err := s.ledger.ChargesByKey(r.Context(), key)
		if err != nil {
			s.unavailable(w, "list charges", err)
			return
		}
		a := answer{IdempotencyKey: key, Count: len(rows), Charges: make([]chargeJSON, len(rows))}
		for i, ch := range rows {
			a.Charges[i] = chargeView(ch, true)
		}
		encode(w, http.StatusOK, a)
	}
}

func (s *Server) handleChargesCounts() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		counts, err := s.ledger.ChargeCounts(r.Context())
		if err != nil {
			s.unavailable(w, "count charges", err)
			return
		}
		if counts == nil {
			counts = map[string]int{}
		}
		encode(w, http.StatusOK, map[string]map[string]int{"counts": counts})
	}
}

func (s *Server) handleProcessorChargesList() http.HandlerFunc {
	type answer struct {
		IdempotencyKey string                `json:"idempotency_key,omitempty"`
		Customer       string                `json:"customer,omitempty"`
		Count          int                   `json:"count"`
		Charges        []processorChargeJSON `json:"charges"`
	}
	return func(w http.ResponseWriter, r *http.Request) {
		key, customer := r.URL.Query().Get("idempotency_key"), r.URL.Query().Get("customer")
		var rows []ProcessorCharge
		switch {
		case key != "":
			rows = s.proc.Charges(key)
		case customer != "":
			// keyless charges carry no key: they are counted by customer
			rows = s.proc.ChargesFor(customer)
		default:
			problem(w, http.StatusBadRequest, "missing idempotency_key", "GET /processor/charges needs ?idempotency_key=K or ?customer=C")
			return
		}
		a := answer{IdempotencyKey: key, Customer: customer, Count: len(rows), Charges: make([]processorChargeJSON, len(rows))}
		if key != "" {
			a.Customer = ""
		}
		for i, c := range rows {
			a.Charges[i] = processorChargeJSON{
				ID:             c.ID,
				IdempotencyKey: c.IdempotencyKey,
				Amount:         c.Amount,
				Currency:       c.Currency,
				Customer:       c.Customer,
				Created:        c.Created.UTC().Format(time.RFC3339),
			}
		}
		encode(w, http.StatusOK, a)
	}
}

func (s *Server) handleProcessorChargesCounts() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, map[string]map[string]int{"counts": s.proc.Counts()})
	}
}
