package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/internal/hint"
	"github.com/idemcheck/idemcheck/webhooks"
)

// webhookIDs is where each profile carries the event id: a header, or
// (stripe) the body's "id".
var webhookIDs = map[string]KeyPlace{
	"standard": {Header: "webhook-id"},
	"stripe":   {BodyField: "id"},
	"github":   {Header: "X-GitHub-Delivery"},
	"shopify":  {Header: "X-Shopify-Webhook-Id"},
}

// webhookDefaults puts the op's key where the webhook profile carries the
// event id, unless the operation says where.
func (s *Scenario) webhookDefaults() {
	w := s.Operation.Webhook
	if w == nil {
		return
	}
	k := &s.Operation.Key
	if k.Header != "" || k.BodyField != "" || k.None || k.FromAnswer != nil {
		return
	}
	if p, ok := webhookIDs[w.Profile]; ok {
		k.Header, k.BodyField = p.Header, p.BodyField
	} else if w.Profile == "custom" && w.IDHeader != "" {
		k.Header = w.IDHeader
	}
}

// Scheme is the webhook's signing scheme with its secret rendered by env;
// nil when the operation sends no webhook.
func (w *Webhook) Scheme(env func(string) string) (*webhooks.Scheme, error) {
	if w == nil {
		return nil, nil
	}
	secret, err := NewText("operation.webhook.secret", w.Secret, env)
	if err != nil {
		return nil, err
	}
	val, err := secret.Render(context.Background(), Vars{})
	if err != nil {
		return nil, err
	}
	s, err := webhooks.New(w.Profile, val, webhooks.Custom{SignatureHeader: w.SignatureHeader, IDHeader: w.IDHeader,
		TimestampHeader: w.TimestampHeader, Signed: w.Signed, Encoding: w.Encoding, Prefix: w.Prefix})
	if err != nil {
		return nil, err
	}
	if w.Event != "" {
		s.Event = w.Event
	}
	return s, nil
}

func (c *checker) webhook() {
	w := c.s.Operation.Webhook
	if w == nil {
		return
	}
	if !slices.Contains(webhooks.Profiles, w.Profile) {
		c.add("operation.webhook.profile", "unknown webhook profile "+quoteName(w.Profile), "profile: standard, stripe, github, shopify or custom")
	}
	switch {
	case w.Secret == "":
		c.add("operation.webhook.secret", "the signing secret is required", `secret: '{{env "WEBHOOK_SECRET"}}'`)
	case !strings.Contains(w.Secret, "{{") || !strings.Contains(w.Secret, "env"):
		c.add("operation.webhook.secret", "a literal secret: the scenario file would keep it", `take it from the environment: secret: '{{env "WEBHOOK_SECRET"}}'`)
	}
	if w.Profile == "custom" {
		if w.SignatureHeader == "" {
			c.add("operation.webhook.signature_header", "the custom profile needs the header the signature goes in", "signature_header: X-Signature")
		}
		if !slices.Contains([]string{"body", "timestamp.body", "id.timestamp.body"}, w.Signed) {
			c.add("operation.webhook.signed", "say what is signed", "signed: body, timestamp.body or id.timestamp.body")
		}
		if w.Encoding != "hex" && w.Encoding != "base64" {
			c.add("operation.webhook.encoding", "say how the signature is written", "encoding: hex or base64")
		}
	} else if w.SignatureHeader != "" || w.Signed != "" || w.Encoding != "" || w.Prefix != "" || w.TimestampHeader != "" {
		c.add("operation.webhook", "signature_header, signed, encoding, prefix and timestamp_header describe the custom profile", "profile: custom, or leave them out")
	}
	if w.Forged < 0 || w.Forged > 0.5 {
		c.add("operation.webhook.forged", "the share of forged deliveries is between 0 and 0.5", "forged: 0.1 forges one event in ten")
	}
	if w.Forged > 0 && !slices.ContainsFunc(c.s.Invariants, func(i Invariant) bool { return i.Check == "rejects_forged" }) {
		c.add("operation.webhook.forged", "forged deliveries are judged by rejects_forged, and it is not among the invariants", "invariants: [..., {check: rejects_forged, oracle: ledger}]")
	}
	if w.Profile == "stripe" && c.s.Operation.Key.BodyField != "" && c.s.Operation.Body == "" {
		c.add("operation.body", "a Stripe event carries its id in the body", `body: '{"id":"{{.Key}}","type":"charge.succeeded","data":{"object":{"amount":100}}}'`)
	}
}

func quoteName(s string) string { return `"` + s + `"` }

// Forges reports whether op id is a forged delivery, and with which
// forgery: the share Forged of ops spread evenly over the ids (op id is
// forged when (id+1)·Forged reaches a new whole number), so that every
// process (and Keys) tells the same and a run of n ops forges
// ⌊n·Forged⌋ of them; forged ops alternate a wrong key and a stale
// timestamp.
func (w *Webhook) Forges(id int, _ string) (bool, webhooks.Forgery) {
	if w == nil || w.Forged <= 0 {
		return false, webhooks.Genuine
	}
	n := math.Floor(float64(id+1) * w.Forged)
	if n == math.Floor(float64(id)*w.Forged) {
		return false, webhooks.Genuine
	}
	if int(n)%2 == 0 {
		return true, webhooks.Stale
	}
	return true, webhooks.BadSignature
}

// WebhookFlag is the operation.webhook of `audit --webhook PROFILE`:
// deliveries signed as profile does with secret, which must be read from
// the environment (a literal one stays in the shell's history and the
// process list); custom is refused, its scheme does not fit in a flag.
func WebhookFlag(profile, secret, event string) (*Webhook, error) {
	switch {
	case !slices.Contains(webhooks.Profiles, profile):
		return nil, hint.New("--webhook standard (Standard Webhooks), stripe, github or shopify",
			fmt.Errorf("--webhook %q: unknown provider profile", profile))
	case !strings.Contains(secret, "{{"):
		return nil, hint.New(`name the environment variable that holds it: --webhook-secret '{{env "WEBHOOK_SECRET"}}'`,
			errors.New("--webhook-secret: a literal secret stays in the shell's history and the process list"))
	case profile == "custom":
		return nil, hint.New("write a scenario file with operation.webhook.profile: custom (docs/scenario.md) and audit it: idemcheck audit receiver.yaml",
			errors.New("--webhook custom: its signing scheme does not fit in a flag"))
	}
	return &Webhook{Profile: profile, Secret: secret, Event: event}, nil
}
