package scenarios

import (
	"strings"
	"testing"
)

func TestWebhookOperation(t *testing.T) {
	doc := func(webhook string) []byte {
		return []byte("name: w\noperation:\n  path: /webhooks\n  body: '{\"type\":\"x\"}'\n  webhook:\n" + webhook + "load: {ops: 1, concurrency: 1}\ninvariants: [{check: same_response}]\n")
	}
	for profile, want := range map[string]KeyPlace{
		"standard": {Header: "webhook-id"}, "stripe": {BodyField: "id"}, "github": {Header: "X-GitHub-Delivery"}, "shopify": {Header: "X-Shopify-Webhook-Id"},
	} {
		sc, err := Parse("w.yaml", doc("    profile: "+profile+"\n    secret: '{{env \"S\"}}'\n"))
		if err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		if sc.Operation.Key.Header != want.Header || sc.Operation.Key.BodyField != want.BodyField {
			t.Errorf("%s: the key goes to %+v, want %+v", profile, sc.Operation.Key, want)
		}
	}
	for name, c := range map[string]struct{ webhook, field, says string }{
		"literal secret": {"    profile: standard\n    secret: whsec_abc\n", "operation.webhook.secret", "would keep it"},
		"no secret":      {"    profile: github\n", "operation.webhook.secret", "required"},
		"profile":        {"    profile: paypal\n    secret: '{{env \"S\"}}'\n", "operation.webhook.profile", "unknown webhook profile"},
		"custom":         {"    profile: custom\n    secret: '{{env \"S\"}}'\n", "operation.webhook.signature_header", "needs the header"},
		"custom fields":  {"    profile: stripe\n    secret: '{{env \"S\"}}'\n    encoding: hex\n", "operation.webhook", "describe the custom profile"},
	} {
		_, err := Parse("w.yaml", doc(c.webhook))
		if err == nil || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %s: %q", name, err, c.field, c.says)
		}
	}
	sc, err := Parse("w.yaml", doc("    profile: custom\n    secret: '{{env \"S\" \"k\"}}'\n    signature_header: X-Sig\n    id_header: X-Id\n    signed: body\n    encoding: hex\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Operation.Key.Header != "X-Id" {
		t.Errorf("custom: key %+v", sc.Operation.Key)
	}
	if s, err := sc.Operation.Webhook.Scheme(func(string) string { return "" }); err != nil || s.Profile() != "custom" {
		t.Errorf("custom scheme: %v", err)
	}
}
