package webhooks

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The providers' published examples.
func TestPublishedVectors(t *testing.T) {
	// Standard Webhooks: the reference libraries' signing test.
	s, err := New("standard", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Custom{})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	at := time.Unix(1614265330, 0)
	body := []byte(`{"test": 2432232314}`)
	s.Sign(h, "msg_p5jXN8AQM9LWM0D4loKWxJek", at, body, Genuine)
	if got := h.Get("webhook-signature"); got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Errorf("standard: %s", got)
	}
	if h.Get("webhook-id") != "msg_p5jXN8AQM9LWM0D4loKWxJek" || h.Get("webhook-timestamp") != "1614265330" {
		t.Errorf("standard headers: %v", h)
	}
	if err := s.Verify(h, body, at.Add(time.Minute), DefaultTolerance); err != nil {
		t.Errorf("standard verify: %v", err)
	}

	// GitHub: "Validating webhook deliveries", its test values.
	g, _ := New("github", "It's a Secret to Everybody", Custom{})
	h = http.Header{}
	g.Sign(h, "72d3162e-cc78-11e3-81ab-4c9367dc0958", time.Now(), []byte("Hello, World!"), Genuine)
	if got := h.Get("X-Hub-Signature-256"); got != "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" {
		t.Errorf("github: %s", got)
	}
	if h.Get("X-GitHub-Delivery") == "" || h.Get("X-GitHub-Event") != "ping" {
		t.Errorf("github headers: %v", h)
	}
}

// Stripe and Shopify publish the scheme, not a fixed example: these were
// computed apart from this package (Python's hmac) from their docs.
func TestDocumentedSchemes(t *testing.T) {
	st, _ := New("stripe", "whsec_test_secret", Custom{})
	h := http.Header{}
	body := []byte(`{"id":"evt_1","type":"charge.succeeded"}`)
	st.Sign(h, "evt_1", time.Unix(1614265330, 0), body, Genuine)
	if got := h.Get("Stripe-Signature"); got != "t=1614265330,v1=a77f58ed88dac6c2cb9d24f149d7424c41f234b3beb04e25d9492b330816350e" {
		t.Errorf("stripe: %s", got)
	}
	sh, _ := New("shopify", "shpss_test_secret", Custom{})
	h = http.Header{}
	sh.Sign(h, "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", time.Now(), []byte(`{"id":820982911946154508}`), Genuine)
	if got := h.Get("X-Shopify-Hmac-Sha256"); got != "AU5n5C4JV1EbE8g4yEzV+ZHbqkXpM29HXkzNAa5zicA=" {
		t.Errorf("shopify: %s", got)
	}
}

// Every profile verifies its own genuine deliveries and refuses a bad
// signature, a stale timestamp where it signs one, a tampered body.
func TestVerify(t *testing.T) {
	now := time.Unix(1700000000, 0)
	custom := Custom{SignatureHeader: "X-Sig", IDHeader: "X-Event-Id", TimestampHeader: "X-Ts", Signed: "id.timestamp.body", Encoding: "hex", Prefix: "sha256="}
	for _, p := range Profiles {
		secret := "s3cret-value"
		if p == "standard" {
			secret = "whsec_c2VjcmV0LWtleS1ieXRlcw=="
		}
		s, err := New(p, secret, custom)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		body := []byte(`{"id":"evt_9","n":1}`)
		sign := func(f Forgery) http.Header {
			h := http.Header{}
			s.Sign(h, "evt_9", now, body, f)
			return h
		}
		if err := s.Verify(sign(Genuine), body, now, DefaultTolerance); err != nil {
			t.Errorf("%s: genuine refused: %v", p, err)
		}
		if err := s.Verify(sign(BadSignature), body, now, DefaultTolerance); !errors.Is(err, ErrVerify) || !strings.Contains(err.Error(), "signature") {
			t.Errorf("%s: a bad signature: %v", p, err)
		}
		if err := s.Verify(sign(Genuine), []byte(`{"id":"evt_9","n":2}`), now, DefaultTolerance); err == nil {
			t.Errorf("%s: a tampered body verified", p)
		}
		stale := s.Verify(sign(Stale), body, now, DefaultTolerance)
		if s.Timed() && (stale == nil || !strings.Contains(stale.Error(), "tolerance")) {
			t.Errorf("%s: a stale timestamp: %v", p, stale)
		}
		if err := s.Verify(http.Header{}, body, now, DefaultTolerance); err == nil {
			t.Errorf("%s: no headers verified", p)
		}
	}
}

func TestNewErrors(t *testing.T) {
	for _, c := range []struct {
		profile, secret string
		custom          Custom
		says            string
	}{
		{"paypal", "x", Custom{}, "want one of standard"},
		{"standard", "", Custom{}, "empty"},
		{"standard", "whsec_!!!", Custom{}, "base64"},
		{"custom", "x", Custom{}, "signature_header"},
		{"custom", "x", Custom{SignatureHeader: "S", Signed: "timestamp.body", Encoding: "hex"}, "timestamp_header"},
		{"custom", "x", Custom{SignatureHeader: "S", Signed: "body", Encoding: "b32"}, "encoding"},
	} {
		_, err := New(c.profile, c.secret, c.custom)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s %+v: %v, want %q", c.profile, c.custom, err, c.says)
		}
		if err != nil && c.secret != "" && c.secret != "x" && strings.Contains(err.Error(), c.secret) {
			t.Errorf("the secret is in the error: %v", err)
		}
	}
}

// Each attempt is stamped a second after the one before, at most a
// minute ahead.
func TestDeliveryTime(t *testing.T) {
	now := time.Unix(1700000000, 0)
	for attempt, want := range map[int]int64{0: 0, 1: 0, 2: 1, 5: 4, 61: 60, 500: 60} {
		if got := DeliveryTime(now, attempt).Unix() - now.Unix(); got != want {
			t.Errorf("attempt %d: %d s ahead, want %d", attempt, got, want)
		}
	}
}
