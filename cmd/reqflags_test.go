package cmd

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/idemcheck/idemcheck/scenarios"
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
	spec := op.Spec("probe")
	spec.Load = scenarios.Load{Ops: 3, Concurrency: 1}
	spec.Invariants = []scenarios.Invariant{{Check: "same_response"}}
	sc, err := fromRequest(spec)
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
	spec2 := op2.Spec("probe")
	spec2.Load = scenarios.Load{Ops: 3, Concurrency: 1}
	spec2.Invariants = []scenarios.Invariant{{Check: "same_response"}}
	if _, err := fromRequest(spec2); err == nil || !strings.HasPrefix(err.Error(), "-d: bad template") {
		t.Errorf("scenario with a broken body template = %v, want the loader's diagnostic on -d", err)
	}
}

// A problem with a scenario built from the command line names the flag
// that set the field, once.
func TestFlagDiagnostics(t *testing.T) {
	ds := flagDiagnostics(scenarios.Diagnostics{
		{Source: "command line", Field: "operation.headers.X", Message: "bad template"},
		{Source: "command line", Field: "oracles[0].effects.per_key.headers.X", Message: "bad template"},
		{Source: "command line", Field: "oracles[0].effects.per_key.value", Message: `bad JSONPath "$[bad"`},
		{Source: "command line", Field: "target", Message: "not http"},
		{Source: "command line", Field: "load.rate", Message: "negative rate"},
	})
	want := `-H X: bad template
--effects-path: bad JSONPath "$[bad"
--target: not http
command line: load.rate: negative rate`
	if ds.Error() != want {
		t.Errorf("flagDiagnostics =\n%s\nwant\n%s", ds.Error(), want)
	}
}
