// Package webhooks signs webhook deliveries the way providers send them,
// and verifies them the way a receiver should: Standard Webhooks, Stripe,
// GitHub, Shopify, or a custom scheme. A delivery's event id is the same
// on every redelivery; its timestamp and signature are made anew for each
// attempt, as providers do.
//
//	profile   id header            signature header      signed                 encoding
//	standard  webhook-id           webhook-signature     id.timestamp.body      v1,<base64>   (secret whsec_<base64 key>)
//	stripe    (body "id")          Stripe-Signature      timestamp.body         t=<ts>,v1=<hex>
//	github    X-GitHub-Delivery    X-Hub-Signature-256   body                   sha256=<hex>
//	shopify   X-Shopify-Webhook-Id X-Shopify-Hmac-Sha256 body                   <base64>
//	custom    (given)              (given)               (given)                (given)
//
// Nothing here sends or prints; secrets are never part of an error.
package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Profiles are the providers' schemes, by name.
var Profiles = []string{"standard", "stripe", "github", "shopify", "custom"}

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock (Standard Webhooks' and Stripe's 5 minutes).
const DefaultTolerance = 5 * time.Minute

// Custom describes a scheme no profile names.
type Custom struct {
	// SignatureHeader carries the signature; IDHeader the event id and
	// TimestampHeader the timestamp (unix seconds), when set.
	SignatureHeader, IDHeader, TimestampHeader string
	// Signed is what is signed: "body", "timestamp.body" or
	// "id.timestamp.body".
	Signed string
	// Encoding is "hex" or "base64"; Prefix goes before it ("sha256=").
	Encoding, Prefix string
}

// Scheme is a profile with its secret: it signs and verifies.
type Scheme struct {
	profile string
	key     []byte
	c       Custom
	// Event is the event type some profiles send in a header
	// (X-GitHub-Event, X-Shopify-Topic).
	Event string
}

// ErrSecret is wrapped by New's error for a secret the profile cannot use.
var ErrSecret = errors.New("webhook secret")

// New makes the scheme of profile with secret (Standard Webhooks:
// "whsec_" and the base64 of the key; the others: the secret's bytes).
func New(profile, secret string, c Custom) (*Scheme, error) {
	if !slices.Contains(Profiles, profile) {
		return nil, fmt.Errorf("webhook profile %q: want one of %s", profile, strings.Join(Profiles, ", "))
	}
	if secret == "" {
		return nil, fmt.Errorf("%w: empty: give it from the environment, secret: '{{env \"WEBHOOK_SECRET\"}}'", ErrSecret)
	}
	s := &Scheme{profile: profile, key: []byte(secret), c: c}
	switch profile {
	case "standard":
		k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if err != nil || len(k) == 0 {
			return nil, fmt.Errorf("%w: a Standard Webhooks secret is whsec_ and the base64 of the key", ErrSecret)
		}
		s.key = k
		s.c = Custom{SignatureHeader: "webhook-signature", IDHeader: "webhook-id", TimestampHeader: "webhook-timestamp", Signed: "id.timestamp.body", Encoding: "base64", Prefix: "v1,"}
	case "stripe":
		s.c = Custom{SignatureHeader: "Stripe-Signature", Signed: "timestamp.body", Encoding: "hex"}
	case "github":
		s.c = Custom{SignatureHeader: "X-Hub-Signature-256", IDHeader: "X-GitHub-Delivery", Signed: "body", Encoding: "hex", Prefix: "sha256="}
		s.Event = "ping"
	case "shopify":
		s.c = Custom{SignatureHeader: "X-Shopify-Hmac-Sha256", IDHeader: "X-Shopify-Webhook-Id", Signed: "body", Encoding: "base64"}
		s.Event = "orders/create"
	case "custom":
		switch {
		case c.SignatureHeader == "":
			return nil, errors.New("a custom webhook scheme needs signature_header")
		case !slices.Contains([]string{"body", "timestamp.body", "id.timestamp.body"}, c.Signed):
			return nil, fmt.Errorf("signed %q: want body, timestamp.body or id.timestamp.body", c.Signed)
		case c.Encoding != "hex" && c.Encoding != "base64":
			return nil, fmt.Errorf("encoding %q: want hex or base64", c.Encoding)
		case c.Signed != "body" && c.TimestampHeader == "":
			return nil, errors.New("a custom scheme that signs a timestamp needs timestamp_header")
		case c.Signed == "id.timestamp.body" && c.IDHeader == "":
			return nil, errors.New("a custom scheme that signs the id needs id_header")
		}
	}
	return s, nil
}

// Profile is the scheme's profile name.
func (s *Scheme) Profile() string { return s.profile }

// IDHeader is the header the event id goes in; "" when it goes in the
// body (Stripe's event "id").
func (s *Scheme) IDHeader() string { return s.c.IDHeader }

// SignatureHeader is the header a delivery's signature goes in.
func (s *Scheme) SignatureHeader() string { return s.c.SignatureHeader }

// Timed reports whether the scheme signs a timestamp (so a stale one
// can be sent).
func (s *Scheme) Timed() bool { return s.c.Signed != "body" }

// mac is the encoded HMAC-SHA256 of what the scheme signs.
func (s *Scheme) mac(id string, ts int64, body []byte) string {
	h := hmac.New(sha256.New, s.key)
	switch s.c.Signed {
	case "id.timestamp.body":
		fmt.Fprintf(h, "%s.%d.", id, ts)
	case "timestamp.body":
		fmt.Fprintf(h, "%d.", ts)
	}
	h.Write(body)
	if s.c.Encoding == "base64" {
		return base64.StdEncoding.EncodeToString(h.Sum(nil))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Forgery is how a delivery is made wrong on purpose.
type Forgery int

// The forgeries.
const (
	// Genuine is a delivery signed as the provider would.
	Genuine Forgery = iota
	// BadSignature is signed with another key.
	BadSignature
	// Stale is signed rightly, with a timestamp outside the tolerance.
	Stale
)

// Sign sets on h the headers of a delivery of event id with body, sent
// at t: the id, the timestamp and the signature (and the event type where
// the profile sends one).
func (s *Scheme) Sign(h http.Header, id string, t time.Time, body []byte, f Forgery) {
	if f == Stale && !s.Timed() {
		f = BadSignature // nothing signs the time: a wrong signature instead
	}
	ts := t.Unix()
	if f == Stale {
		ts -= int64((DefaultTolerance + time.Hour) / time.Second)
	}
	sig := s.mac(id, ts, body)
	if f == BadSignature {
		forged := *s
		forged.key = append([]byte("forged-"), s.key...)
		sig = forged.mac(id, ts, body)
	}
	if s.c.IDHeader != "" {
		h.Set(s.c.IDHeader, id)
	}
	switch s.profile {
	case "stripe":
		h.Set(s.c.SignatureHeader, fmt.Sprintf("t=%d,v1=%s", ts, sig))
	case "github":
		h.Set(s.c.SignatureHeader, s.c.Prefix+sig)
		h.Set("X-GitHub-Event", s.Event)
	case "shopify":
		h.Set(s.c.SignatureHeader, sig)
		h.Set("X-Shopify-Topic", s.Event)
	default:
		if s.c.TimestampHeader != "" {
			h.Set(s.c.TimestampHeader, strconv.FormatInt(ts, 10))
		}
		h.Set(s.c.SignatureHeader, s.c.Prefix+sig)
	}
}

// ErrVerify is wrapped by every error Verify returns.
var ErrVerify = errors.New("webhook not verified")

// Verify checks a delivery as a receiver should: the signature over the
// raw body, in constant time, and the timestamp within tolerance of now
// (where the profile signs one). id is the event id the headers carry
// (the body's for Stripe: given by the caller).
func (s *Scheme) Verify(h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id := ""
	if s.c.IDHeader != "" {
		if id = h.Get(s.c.IDHeader); id == "" {
			return fmt.Errorf("%w: no %s header", ErrVerify, s.c.IDHeader)
		}
	}
	got := h.Get(s.c.SignatureHeader)
	if got == "" {
		return fmt.Errorf("%w: no %s header", ErrVerify, s.c.SignatureHeader)
	}
	var ts int64
	var sigs []string
	switch s.profile {
	case "stripe":
		for _, part := range strings.Split(got, ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
			switch k {
			case "t":
				ts, _ = strconv.ParseInt(v, 10, 64)
			case "v1":
				sigs = append(sigs, v)
			}
		}
	case "standard":
		// several space-separated "v1,<sig>" may be sent (key rotation)
		for _, part := range strings.Fields(got) {
			if v, ok := strings.CutPrefix(part, "v1,"); ok {
				sigs = append(sigs, v)
			}
		}
	default:
		sigs = []string{strings.TrimPrefix(got, s.c.Prefix)}
	}
	if s.Timed() {
		if s.c.TimestampHeader != "" {
			ts, _ = strconv.ParseInt(h.Get(s.c.TimestampHeader), 10, 64)
		}
		if ts == 0 {
			return fmt.Errorf("%w: no timestamp", ErrVerify)
		}
		if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
			return fmt.Errorf("%w: the timestamp is %v from now, outside the tolerance of %v", ErrVerify, d.Round(time.Second), tolerance)
		}
	}
	want := s.mac(id, ts, body)
	for _, sig := range sigs {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("%w: the signature does not match", ErrVerify)
}

// DeliveryTime is the time attempt (1-based) of a webhook delivery is
// signed at, sent at now: now, plus a second for each earlier attempt.
// Signed times are whole seconds, so attempts a moment apart would
// otherwise share a timestamp and a signature, as no provider's
// redeliveries do; at most a minute ahead (the 61st attempt and later
// share that stamp) stays well within every provider's tolerance.
func DeliveryTime(now time.Time, attempt int) time.Time {
	return now.Add(time.Duration(min(max(attempt-1, 0), maxAhead)) * time.Second)
}

// maxAhead is the most seconds DeliveryTime stamps a delivery ahead of
// now: every provider's tolerance is five minutes or more.
const maxAhead = 60
