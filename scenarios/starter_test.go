package scenarios

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A starter file loads back to what it was given, whatever its values
// hold that YAML would read otherwise (colons, quotes, a leading '{').
func TestStarterYAMLLoads(t *testing.T) {
	st := Starter{
		Name: "weird: name",
		Request: Request{Method: "POST", Path: "/v1/charges?mode=#x", Body: `{"amount":100,"note":"it's: fine"}`,
			Headers: map[string]string{"Authorization": `Bearer {{env "API_TOKEN"}}`, "X-Trace": `a: b "q"`}},
		Key:           KeyPlace{BodyField: "op_id"},
		Targets:       []string{"http://a:1", "http://b:2"},
		Effects:       "/count?k={{.Key}}",
		EffectsMethod: "POST",
		EffectsValue:  "$.n",
		Credentials:   map[string]string{"Authorization": `Bearer {{env "API_TOKEN"}}`},
	}
	b, err := StarterYAML(st)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Parse("init", b)
	if err != nil {
		t.Fatalf("the starter does not load: %v\n%s", err, b)
	}
	if diff := cmp.Diff(st.Request, sc.Operation.Request); diff != "" || sc.Name != st.Name || sc.Operation.Key != st.Key {
		t.Errorf("starter loads as %q %+v (-want +got request):\n%s", sc.Name, sc.Operation.Key, diff)
	}
	if diff := cmp.Diff([]string(sc.Target), st.Targets); diff != "" {
		t.Errorf("targets (-got +want):\n%s", diff)
	}
	pk := sc.Oracles[0].Effects.PerKey
	if pk.Method != "POST" || pk.Path != st.Effects || pk.Value != "$.n" || pk.Headers["Authorization"] != st.Credentials["Authorization"] {
		t.Errorf("effects probe = %+v", pk)
	}
}

// The secret rules of the flags that write scenario files or sign
// deliveries refuse a literal secret, and take one read from the
// environment.
func TestFlagSecrets(t *testing.T) {
	u, _ := url.Parse("https://user:pw@api.example.com/c")
	if err := URLCredentials(u); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("URLCredentials(%s) = %v, want a refusal that does not show the password", u.Redacted(), err)
	}
	u.User = nil
	if err := URLCredentials(u); err != nil {
		t.Errorf("URLCredentials without a user = %v", err)
	}
	if err := LiteralAuth([]string{"bearer={{env \"T\"}}", "apikey=sk_live_1"}); err == nil || !strings.Contains(err.Error(), "--auth apikey") || strings.Contains(err.Error(), "sk_live") {
		t.Errorf("LiteralAuth = %v, want apikey refused, its value unshown", err)
	}
	if err := LiteralAuth([]string{"bearer={{env \"T\"}}"}); err != nil {
		t.Errorf("LiteralAuth(env) = %v", err)
	}
	for _, c := range []struct{ profile, secret, says string }{
		{"paypal", `{{env "S"}}`, "unknown provider profile"},
		{"stripe", "whsec_x", "a literal secret"},
		{"custom", `{{env "S"}}`, "does not fit in a flag"},
	} {
		if _, err := WebhookFlag(c.profile, c.secret, ""); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("WebhookFlag(%s, %s) = %v, want %q", c.profile, c.secret, err, c.says)
		}
	}
	if w, err := WebhookFlag("stripe", `{{env "S"}}`, "charge.succeeded"); err != nil || w.Profile != "stripe" || w.Event != "charge.succeeded" {
		t.Errorf("WebhookFlag(stripe) = %+v, %v", w, err)
	}
}
