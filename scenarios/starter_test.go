package scenarios

import (
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
