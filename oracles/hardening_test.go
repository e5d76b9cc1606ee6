package oracles

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A count of -1 is no count: the reading fails (the checks are
// inconclusive), it neither accuses nor clears the target.
func TestNegativeCountIsNoReading(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/counts" {
			io.WriteString(w, `{"counts":{"k1":1,"k2":-1}}`)
			return
		}
		io.WriteString(w, `{"count":-1}`)
	}))
	defer srv.Close()
	for name, o := range map[string]*HTTPEffects{
		"per key": {OracleName: "ledger", PerKey: get(srv.URL, "/c?key={key}"), Value: "$.count"},
		"bulk":    {OracleName: "ledger", Bulk: get(srv.URL, "/counts"), Value: "$.counts"},
	} {
		r := Observe(context.Background(), o, keysHistory("k1", "k2"))
		if r.Err == "" || !strings.Contains(r.Err, "cannot be negative") {
			t.Errorf("%s: Observe = %+v, want an error saying a count cannot be negative", name, r)
		}
	}
}

// A server that reflects the request's credentials in an error page, the
// token across the snippet's cut, puts no part of it in the error.
func TestReflectedSecretsNotInReadError(t *testing.T) {
	const token = "s3cret-token" // what get sends as a bearer token
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		// "Bearer s3cret-token" straddles the 200-byte snippet
		io.WriteString(w, strings.Repeat("a", snippetLen-10)+r.Header.Get("Authorization")+" q="+r.URL.Query().Get("private_token"))
	}))
	defer srv.Close()
	o := &HTTPEffects{OracleName: "ledger", Bulk: get(srv.URL, "/counts?private_token="+token+"x&limit=10"), Value: "$.counts"}
	r := Observe(context.Background(), o, keysHistory("k1"))
	if r.Err == "" {
		t.Fatal("Observe of a 401 = no error")
	}
	for _, part := range []string{token, token[:3], token + "x"} {
		if strings.Contains(r.Err, part) {
			t.Errorf("Observe error %q shows %q", r.Err, part)
		}
	}
	if !strings.Contains(r.Err, "limit=xxxxx") || !strings.Contains(r.Err, "status 401") {
		t.Errorf("Observe error %q: want the URL (values masked) and the status", r.Err)
	}
	var re *ReadError
	if _, err := o.Observe(context.Background(), keysHistory("k1")); !errors.As(err, &re) || !errors.Is(err, ErrStatus) {
		t.Errorf("Observe error %v, want a *ReadError wrapping ErrStatus", err)
	}
}

// A per-key read whose value is an object (no value path given, the
// whole answer read) says where in it a count may be.
func TestPerKeyObjectSuggestsCountPaths(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"charges":[{"id":"ch_1"}],"count":1,"key":"k1","meta":{"n":1}}`)
	}))
	defer srv.Close()
	for value, want := range map[string]string{"": "a count may be at $.charges or $.count", "$": "a count may be at $.charges or $.count"} {
		o := &HTTPEffects{OracleName: "ledger", PerKey: get(srv.URL, "/c?key={key}"), Value: value}
		r := Observe(context.Background(), o, keysHistory("k1"))
		if !strings.Contains(r.Err, want) {
			t.Errorf("value %q: Observe error %q, want it to say %q", value, r.Err, want)
		}
	}
}
