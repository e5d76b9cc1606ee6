package cmd

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestRequestFlags(t *testing.T) {
	var r requestFlags
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	r.register(fs)
	if err := fs.Parse([]string{"-d", `{"amount":100,"customer":"cus_{{.Seq}}"}`, "-H", "Authorization: Bearer {{.User}}", "--target", "http://127.0.0.1:9"}); err != nil {
		t.Fatal(err)
	}
	op, err := r.resolve("post", "https://api.example.com/v1/charges?mode=x")
	if err != nil {
		t.Fatal(err)
	}
	if op.Method != "POST" || op.Path != "/v1/charges?mode=x" || op.Base.String() != "https://api.example.com" || op.Key.Header != "Idempotency-Key" {
		t.Errorf("resolve = %+v", op)
	}
	sc, err := op.scenario("probe", map[string]any{"load": map[string]any{"ops": 3, "concurrency": 1}, "invariants": []any{map[string]any{"check": "same_response"}}})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Operation.Path != "/v1/charges?mode=x" || sc.Operation.Key.Header != "Idempotency-Key" || sc.Load.Ops != 3 ||
		sc.Operation.Headers["Authorization"] != "Bearer {{.User}}" {
		t.Errorf("scenario = %+v", sc.Operation)
	}
	if u, err := sc.TargetURL(""); err != nil || u.String() != "http://127.0.0.1:9" {
		t.Errorf("target = %v, %v; want the --target", u, err)
	}

	bad := []struct {
		method, url string
		flags       requestFlags
		want        string
	}{
		{"CHARGE", "http://x/y", requestFlags{}, "not an HTTP method"},
		{"POST", "ftp://u:secret@x/y", requestFlags{}, "not an http(s) URL"},
		{"POST", "http://x/y", requestFlags{KeyHeader: "K", KeyField: "f"}, "both set"},
		{"POST", "http://x/y", requestFlags{Headers: []string{"Authorization Bearer secret"}}, "want 'Name: value'"},
	}
	for _, b := range bad {
		_, err := b.flags.resolve(b.method, b.url)
		if err == nil || !strings.Contains(err.Error(), b.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("resolve(%s %s, %+v) = %v, want an error saying %q and no secret", b.method, b.url, b.flags, err, b.want)
		}
	}
	// A template that does not parse is refused as a scenario would be.
	r2 := requestFlags{Data: `{"amount":{{.Nope}`}
	op2, err := r2.resolve("POST", "http://x/y")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op2.scenario("probe", nil); err == nil {
		t.Error("scenario with a broken body template = nil error, want the loader's diagnostic")
	}
}
