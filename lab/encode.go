package lab

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// maxBody caps request bodies.
const maxBody = 1 << 20

// encode writes v as a JSON answer with status.
func encode(w http.ResponseWriter, status int, v any) {
	body, err := marshal(v)
	if err != nil {
		problem(w, http.StatusInternalServerError, "encoding failed", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// marshal encodes v as JSON followed by a newline, as a stored body.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return buf.Bytes(), nil
}

// writeResponse writes a stored (or just built) JSON response; a replay
// carries Idempotent-Replayed: true.
func writeResponse(w http.ResponseWriter, resp Response, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// problemDetails is an RFC 9457 problem+json body.
type problemDetails struct {
	Type           string `json:"type"`
	Title          string `json:"title"`
	Status         int    `json:"status"`
	Detail         string `json:"detail,omitempty"`
	CurrentVersion *int64 `json:"current_version,omitempty"`
}

// problem writes an application/problem+json error.
func problem(w http.ResponseWriter, status int, title, detail string) {
	writeProblem(w, problemDetails{Type: "about:blank", Title: title, Status: status, Detail: detail})
}

func writeProblem(w http.ResponseWriter, p problemDetails) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_, _ = w.Write(problemBody(p))
}

// problemBody is the body writeProblem writes for p.
func problemBody(p problemDetails) []byte {
	body, _ := json.Marshal(p) // cannot fail: strings and ints
	return append(body, '\n')
}

// inFlight answers 409 for a key whose first request is still running.
func inFlight(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	problem(w, http.StatusConflict, "request in progress",
		"a request with this Idempotency-Key is in progress; retry later")
}

// unavailable answers 503 for a backend failure: the lab fails closed and
// never charges without a record.
func (s *Server) unavailable(w http.ResponseWriter, what string, err error) {
	s.log.Error("backend failed", "op", what, "err", err)
	w.Header().Set("Retry-After", "1")
	problem(w, http.StatusServiceUnavailable, "store unavailable", what+": "+err.Error())
}

// readBody reads a request body of at most maxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return body, nil
}

// decode reads a JSON object body into v (unknown fields are allowed).
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decode body: %w", err)
	}
	return nil
}

// canonical returns the canonical form of a JSON document: decoded to
// values (numbers kept as written) and re-encoded with sorted object keys
// and no insignificant space, so reordered or re-spaced bodies are equal.
func canonical(body []byte) ([]byte, any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("decode body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, errors.New("decode body: trailing data after the JSON value")
	}
	c, err := json.Marshal(v)
	if err != nil {
		return nil, nil, fmt.Errorf("canonicalize body: %w", err)
	}
	return c, v, nil
}

// fingerprint hashes an operation name and a canonical body.
func fingerprint(op string, canonicalBody []byte) string {
	h := sha256.New()
	h.Write([]byte(op))
	h.Write([]byte{0})
	h.Write(canonicalBody)
	return hex.EncodeToString(h.Sum(nil))
}

// principal is the user named by a bearer token, or "anonymous".
func principal(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "anonymous"
	}
	return token
}

// Key validation errors.
var (
	errKeyMissing = errors.New("the Idempotency-Key header is required")
	errKeyMany    = errors.New("more than one Idempotency-Key header")
	errKeyEmpty   = errors.New("the Idempotency-Key header is empty")
	errKeyLong    = errors.New("the Idempotency-Key header is longer than 255 characters")
	errKeyControl = errors.New("the Idempotency-Key header holds control characters")
	errKeyUTF8    = errors.New("the Idempotency-Key header is not valid UTF-8")
)

// maxKeyLen is the longest key accepted, as at Stripe.
const maxKeyLen = 255

// unquoteKey turns the structured-field string form "abc" into abc, so the
// quoted and raw forms name the same key.
func unquoteKey(k string) string {
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		return k[1 : len(k)-1]
	}
	return k
}

// idempotencyKey returns the request's validated Idempotency-Key.
func idempotencyKey(h http.Header) (string, error) {
	vals := h.Values("Idempotency-Key")
	switch {
	case len(vals) == 0:
		return "", errKeyMissing
	case len(vals) > 1:
		return "", errKeyMany
	}
	k := unquoteKey(vals[0])
	switch {
	case k == "":
		return "", errKeyEmpty
	case len(k) > maxKeyLen:
		return "", errKeyLong
	}
	for _, c := range []byte(k) {
		if c < 0x20 || c == 0x7f {
			return "", errKeyControl
		}
	}
	if !utf8.ValidString(k) {
		return "", errKeyUTF8
	}
	return k, nil
}
