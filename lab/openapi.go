package lab

import (
	_ "embed"
	"net/http"
)

// openAPIDoc describes the lab's charges and likes (OpenAPI 3.1), so
// that `idemcheck audit --openapi URL/openapi.json` audits them in one
// command: POST /charges takes its key in the Idempotency-Key header and
// links to its read-back, GET /charges?idempotency_key=K; a like takes
// its key in the body's op_id (x-idempotency-key). POST /naive/charges
// declares no key, so an audit leaves it out and says why. The debits
// are not described: a compare-and-set debit needs an account at a
// known version, which no request of the document makes.
//
//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) handleOpenAPI() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(openAPIDoc)
	}
}
