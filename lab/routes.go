package lab

import "net/http"

// routes registers every route of the lab, in one place.
func (s *Server) routes() {
	// Scenario 1: charges.
	s.mux.Handle("POST /charges", s.handleChargesCreate())
	s.mux.Handle("POST /naive/charges", s.handleNaiveChargesCreate())
	s.mux.Handle("GET /charges", s.handleChargesList())
	s.mux.Handle("GET /charges/counts", s.handleChargesCounts())
	s.mux.Handle("GET /processor/charges", s.handleProcessorChargesList())
	s.mux.Handle("GET /processor/charges/counts", s.handleProcessorChargesCounts())

	// Scenario 2: conditional update.
	s.mux.Handle("PUT /accounts/{id}", s.handleAccountPut())
	s.mux.Handle("GET /accounts/{id}", s.handleAccountGet())
	s.mux.Handle("POST /accounts/{id}/debit", s.handleAccountDebit(false))
	s.mux.Handle("POST /naive/accounts/{id}/debit", s.handleAccountDebit(true))
	s.mux.Handle("GET /accounts/{id}/debits", s.handleAccountDebits())

	// Scenario 3: counter.
	s.mux.Handle("POST /posts/{id}/like", s.handlePostLike())
	s.mux.Handle("POST /naive/posts/{id}/like", s.handleNaivePostLike())
	s.mux.Handle("GET /posts/{id}", s.handlePostGet())

	// Scenario 4: webhook receivers (Standard Webhooks deliveries).
	s.mux.Handle("POST /webhooks", s.handleWebhook(false))
	s.mux.Handle("POST /naive/webhooks", s.handleWebhook(true))
	s.mux.Handle("GET /customers/{id}", s.handleCustomerGet())

	// Operations.
	s.mux.Handle("GET /healthz", s.handleHealthz())
	s.mux.Handle("GET /openapi.json", s.handleOpenAPI())
	s.mux.Handle("POST /reset", s.handleReset())
}

func (s *Server) handleHealthz() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}

func (s *Server) handleReset() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.cfg.AllowReset {
			problem(w, http.StatusForbidden, "reset disabled", "start the lab with reset allowed to use POST /reset")
			return
		}
		ctx := r.Context()
		if err := s.ledger.Reset(ctx); err != nil {
			s.unavailable(w, "reset ledger", err)
			return
		}
		if err := s.cache.Reset(ctx); err != nil {
			s.unavailable(w, "reset cache", err)
			return
		}
		s.proc.Reset()
		s.crashes.Store(0)
		w.WriteHeader(http.StatusNoContent)
	}
}

// serveUnrouted answers a request no route matches with the mux's status
// (404, or 405 with its Allow header) as problem+json.
func (s *Server) serveUnrouted(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := &statusRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	if allow := rec.header.Get("Allow"); allow != "" {
		w.Header().Set("Allow", allow)
	}
	status := rec.status
	if status == 0 || status < 400 {
		status = http.StatusNotFound
	}
	problem(w, status, http.StatusText(status), "no route for "+r.Method+" "+r.URL.Path)
}

// statusRecorder keeps the status and headers of the mux's error handler.
type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header         { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *statusRecorder) WriteHeader(status int)      { r.status = status }
