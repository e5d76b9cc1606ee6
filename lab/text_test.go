package lab

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

func TestStorableText(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" for no error, else a piece of the message
	}{
		{"cus_1", ""},
		{"", ""},
		{"Zoë 客户 🙂", ""},
		{"cus\x00x", "NUL byte (U+0000) at byte 3"},
		{"\x00", "NUL"},
		{"cus\xff", "not valid UTF-8"},
		{"\xc3", "not valid UTF-8"},         // a truncated 2-byte sequence
		{"\xed\xa0\x80", "not valid UTF-8"}, // a UTF-16 surrogate
	}
	for _, tt := range tests {
		err := storableText("customer", tt.in)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("storableText(%q) = %v, want nil", tt.in, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) ||
			!strings.Contains(err.Error(), "customer") || !errors.Is(err, errNotText)):
			t.Errorf("storableText(%q) = %v, want an errNotText naming customer with %q", tt.in, err, tt.want)
		}
	}
}

// unstorable is a request carrying a string no ledger can store, and what
// the 400 must name.
type unstorable struct {
	name  string
	r     req
	field string // the field the problem's detail names
	why   string // and why
}

func unstorableRequests() []unstorable {
	withCustomer := func(c string) string {
		return `{"amount":100,"currency":"usd","customer":"` + c + `"}`
	}
	naive := func(key, body string) req {
		return req{method: "POST", path: "/naive/charges", key: key, body: body}
	}
	return []unstorable{
		// The reported bug: NUL in customer, sent as a JSON escape.
		{"customer NUL escape", charge("alice", "k1", withCustomer(`cus\u0000x`)), "customer", "NUL"},
		{"customer NUL escape only", charge("alice", "k2", withCustomer(`\u0000`)), "customer", "NUL"},
		{"customer invalid UTF-8", charge("alice", "k3", withCustomer("cus\xff")), "customer", "UTF-8"},
		{"customer truncated UTF-8", charge("alice", "k4", withCustomer("cus\xc3")), "customer", "UTF-8"},
		{"other field invalid UTF-8", charge("alice", "k5", "{\"amount\":100,\"currency\":\"usd\",\"note\":\"\xff\"}"), "note", "UTF-8"},
		{"key invalid UTF-8", charge("alice", "k6\xff", body1), "Idempotency-Key", "UTF-8"},
		{"key NUL", charge("alice", "k7\x00", body1), "Idempotency-Key", "control"},
		{"bearer token NUL", charge("al\x00ice", "k8", body1), "bearer token", "NUL"},
		{"bearer token invalid UTF-8", charge("al\xffice", "k9", body1), "bearer token", "UTF-8"},
		{"naive customer NUL", naive("k10", withCustomer(`cus\u0000x`)), "customer", "NUL"},
		{"naive customer invalid UTF-8", naive("k11", withCustomer("\xff")), "customer", "UTF-8"},
		{"naive key invalid UTF-8", naive("k12\xff", body1), "Idempotency-Key", "UTF-8"},
		{"naive key NUL", naive("k13\x00", body1), "Idempotency-Key", "NUL"},
		{"list key NUL", req{method: "GET", path: "/charges?idempotency_key=k%00"}, "idempotency_key", "NUL"},
		{"list key invalid UTF-8", req{method: "GET", path: "/charges?idempotency_key=k%FF"}, "idempotency_key", "UTF-8"},
		{"account id NUL", req{method: "PUT", path: "/accounts/a%00", body: `{"balance":100}`}, "account id", "NUL"},
		{"account get NUL", req{method: "GET", path: "/accounts/a%00"}, "account id", "NUL"},
		{"account debits NUL", req{method: "GET", path: "/accounts/a%00/debits"}, "account id", "NUL"},
		{"debit op_id NUL", req{method: "POST", path: "/accounts/a1/debit", body: `{"amount":1,"expected_version":0,"op_id":"o\u0000"}`}, "op_id", "NUL"},
		{"naive debit account NUL", req{method: "POST", path: "/naive/accounts/a%ff/debit", body: `{"amount":1}`}, "account id", "UTF-8"},
		{"like op_id NUL", req{method: "POST", path: "/posts/p1/like", body: `{"op_id":"o\u0000"}`}, "op_id", "NUL"},
		{"naive like post NUL", req{method: "POST", path: "/naive/posts/p%00/like"}, "post id", "NUL"},
		{"post get invalid UTF-8", req{method: "GET", path: "/posts/p%ff"}, "post id", "UTF-8"},
	}
}

// runUnstorableText sends each unstorable request twice (a client retries
// a 400 it does not understand) and wants a 400 problem naming the field
// and why every time, no processor charge and no ledger row.
func runUnstorableText(t *testing.T, newLab func(t *testing.T) (*Server, Ledger)) {
	for _, tt := range unstorableRequests() {
		t.Run(tt.name, func(t *testing.T) {
			s, l := newLab(t)
			for attempt := range 2 {
				w := serve(s, tt.r, context.Background())
				p := wantProblem(t, tt.name, w, http.StatusBadRequest)
				detail, _ := p["detail"].(string)
				if !strings.Contains(detail, tt.field) || !strings.Contains(detail, tt.why) {
					t.Errorf("attempt %d: %s %s detail = %q, want it to name %q and %q",
						attempt, tt.r.method, tt.r.path, detail, tt.field, tt.why)
				}
			}
			if n := s.Processor().total(); n != 0 {
				t.Errorf("processor charges = %d, want 0", n)
			}
			counts, err := l.ChargeCounts(context.Background())
			if err != nil {
				t.Fatalf("ChargeCounts = %v", err)
			}
			if len(counts) != 0 {
				t.Errorf("ledger rows per key = %v, want none", counts)
			}
		})
	}
}

func TestUnstorableTextMemory(t *testing.T) {
	runUnstorableText(t, func(t *testing.T) (*Server, Ledger) {
		tl := newTestLab(t, Config{})
		return tl.Server, tl.ledger
	})
}

// TestUnstorableTextPostgres is the reported bug: on Postgres a NUL in the
// customer charged the processor, then answered 503 with no ledger row, on
// every retry. It must answer 400, as on memory, and charge nothing.
func TestUnstorableTextPostgres(t *testing.T) {
	// Each case on a fresh Postgres ledger: a sweep for the long suite;
	// the fast one holds the memory ledger to the same cases.
	testenv.SkipUnlessLong(t)
	t.Parallel()
	dsn := testsvc.Postgres(t)
	runUnstorableText(t, func(t *testing.T) (*Server, Ledger) {
		l := newTestPostgresLedger(t, dsn)
		s, err := New(Config{ProcessorLatency: NoProcessorLatency}, l, NewMemoryCache(nil))
		if err != nil {
			t.Fatal(err)
		}
		return s, l
	})
}
