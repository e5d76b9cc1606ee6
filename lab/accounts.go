package lab

import (
	"context"
	"errors"
	"net/http"
)

type accountJSON struct {
	ID      string `json:"id"`
	Balance int64  `json:"balance"`
	Version int64  `json:"version"`
}

func accountView(a Account) accountJSON {
	return accountJSON(a)
}

type debitJSON struct {
	OpID    string `json:"op_id"`
	Amount  int64  `json:"amount"`
	Version int64  `json:"version"`
}

func (s *Server) handleAccountPut() http.HandlerFunc {
	type request struct {
		Balance *int64 `json:"balance"`
	}
	return func(w http.ResponseWriter, r *http.Request) {
		var req request
		if err := decode(w, r, &req); err != nil {
			problem(w, http.StatusBadRequest, "invalid account", err.Error())
			return
		}
		if req.Balance == nil || *req.Balance < 0 {
			problem(w, http.StatusBadRequest, "invalid account", "balance must be an integer >= 0")
			return
		}
		if rejectText(w, "invalid account", "account id", r.PathValue("id")) {
			return
		}
		a, err := s.ledger.PutAccount(context.WithoutCancel(r.Context()), r.PathValue("id"), *req.Balance)
		if err != nil {
			s.unavailable(w, "put account", err)
			return
		}
		encode(w, http.StatusOK, accountView(a))
	}
}

func (s *Server) handleAccountGet() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if rejectText(w, "invalid account", "account id", r.PathValue("id")) {
			return
		}
		a, err := s.ledger.Account(r.Context(), r.PathValue("id"))
		if err != nil {
			s.accountError(w, "get account", err)
			return
		}
		encode(w, http.StatusOK, accountView(a))
	}
}

// handleAccountDebit serves the protected debit (a compare-and-set on
// expected_version) and, with naive, the blind debit.
func (s *Server) handleAccountDebit(naive bool) http.HandlerFunc {
	type request struct {
		Amount          *int64 `json:"amount"`
		ExpectedVersion *int64 `json:"expected_version"`
		OpID            string `json:"op_id"`
	}
	blind := naive || s.bugs[BugBlindDebit]
	return func(w http.ResponseWriter, r *http.Request) {
		var req request
		if err := decode(w, r, &req); err != nil {
			problem(w, http.StatusBadRequest, "invalid debit", err.Error())
			return
		}
		if req.Amount == nil || *req.Amount <= 0 {
			problem(w, http.StatusBadRequest, "invalid debit", "amount must be a positive integer")
			return
		}
		if !naive && req.ExpectedVersion == nil {
			problem(w, http.StatusBadRequest, "invalid debit", "expected_version is required")
			return
		}
		if rejectText(w, "invalid debit", "account id", r.PathValue("id"), "op_id", req.OpID) {
			return
		}
		expected := req.ExpectedVersion
		if blind {
			expected = nil
		}
		a, err := s.ledger.Debit(context.WithoutCancel(r.Context()), r.PathValue("id"), *req.Amount, expected, req.OpID)
		if err != nil {
			s.accountError(w, "debit", err)
			return
		}
		encode(w, http.StatusOK, accountView(a))
	}
}

func (s *Server) handleAccountDebits() http.HandlerFunc {
	type answer struct {
		ID     string      `json:"id"`
		Debits []debitJSON `json:"debits"`
	}
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if rejectText(w, "invalid account", "account id", id) {
			return
		}
		ds, err := s.ledger.Debits(r.Context(), id)
		if err != nil {
			s.accountError(w, "list debits", err)
			return
		}
		a := answer{ID: id, Debits: make([]debitJSON, len(ds))}
		for i, d := range ds {
			a.Debits[i] = debitJSON(d)
		}
		encode(w, http.StatusOK, a)
	}
}

// accountError maps a ledger error to its answer.
func (s *Server) accountError(w http.ResponseWriter, what string, err error) {
	var stale *StaleError
	switch {
	case errors.As(err, &stale):
		cur := stale.Current
		writeProblem(w, problemDetails{
			Type: "about:blank", Title: "version conflict", Status: http.StatusConflict,
			Detail: "expected_version is not the current version", CurrentVersion: &cur,
		})
	case errors.Is(err, ErrNotFound):
		problem(w, http.StatusNotFound, "account not found", "no such account")
	case errors.Is(err, ErrInsufficientFunds):
		problem(w, http.StatusUnprocessableEntity, "insufficient funds", "the balance is lower than the amount")
	default:
		s.unavailable(w, what, err)
	}
}
