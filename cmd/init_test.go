package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/scenarios"
)

// rootWith is the command tree with init and --version, whether or not
// NewCmdRoot has them yet.
func rootWith(f *Factory) *cobra.Command {
	root := NewCmdRoot(f)
	if c, _, err := root.Find([]string{"init"}); err != nil || c == root {
		root.AddCommand(NewCmdInit(f, nil))
	}
	setVersion(root)
	return root
}

func runRoot(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb strings.Builder
	f := &Factory{Streams: Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Getenv: func(string) string { return "" }}
	root := rootWith(f)
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	code := report(&errb, root.Execute())
	return result{code, out.String(), errb.String()}
}

func TestInitWritesAScenarioThatLoads(t *testing.T) {
	r := runRoot(t, "init", "post", "https://staging.example.com/v1/charges?mode=test",
		"-d", `{"amount":100,"customer":"cus_{{.Seq}}"}`, "-H", `Authorization: Bearer {{env "API_TOKEN"}}`, "-H", "X-Trace: it's: fine",
		"--effects", "https://staging.example.com/internal/charges?key={{.Key}}")
	if r.code != ExitOK {
		t.Fatalf("init: exit %d\n%s", r.code, r.err)
	}
	sc, err := scenarios.Parse("init", []byte(r.out))
	if err != nil {
		t.Fatalf("the file init wrote does not load: %v\n%s", err, r.out)
	}
	if sc.Name != "post-v1-charges" || sc.Operation.Method != "POST" || sc.Operation.Path != "/v1/charges?mode=test" ||
		sc.Operation.Key.Header != "Idempotency-Key" || sc.Operation.Headers["X-Trace"] != "it's: fine" {
		t.Errorf("scenario = %+v", sc.Operation)
	}
	var checks []string
	for _, inv := range sc.Invariants {
		checks = append(checks, inv.Check+"@"+inv.Oracle)
	}
	if diff := cmp.Diff([]string{"exactly_once@effects", "same_response@"}, checks); diff != "" {
		t.Errorf("invariants (-want +got):\n%s", diff)
	}
	if len(sc.Oracles) != 1 || !strings.Contains(r.out, `path: /internal/charges?key={{.Key}}`) || !strings.Contains(r.out, `Authorization: Bearer {{env "API_TOKEN"}}`) {
		t.Errorf("oracle: %+v\n%s", sc.Oracles, r.out)
	}
	if u, err := sc.TargetURL(""); err != nil || u.String() != "https://staging.example.com" {
		t.Errorf("target = %v, %v", u, err)
	}
}

// The README's init command: --effects as audit takes it ('GET /path'),
// --effects-path for the count; another method is kept.
func TestInitEffectsAsAuditTakesThem(t *testing.T) {
	for _, tc := range []struct{ effects, method string }{
		{"GET /v1/charges?idempotency_key={{.Key}}", "GET"},
		{"post /v1/charges/count?key={{.Key}}", "POST"},
	} {
		r := runRoot(t, "init", "POST", "https://staging.example.com/v1/charges", "-d", `{"amount":100}`,
			"-H", `Authorization: Bearer {{env "API_TOKEN"}}`, "--effects", tc.effects, "--effects-path", "$.total")
		if r.code != ExitOK {
			t.Fatalf("init --effects %q: exit %d\n%s", tc.effects, r.code, r.err)
		}
		sc, err := scenarios.Parse("init", []byte(r.out))
		if err != nil {
			t.Fatalf("the file init wrote does not load: %v\n%s", err, r.out)
		}
		p := sc.Oracles[0].Effects.PerKey
		if p == nil || p.Method != tc.method || !strings.HasPrefix(p.Path, "/v1/charges") || p.Value != "$.total" {
			t.Errorf("--effects %q: per-key probe %+v, want method %q, the path, value $.total", tc.effects, p, tc.method)
		}
	}
}

func TestInitKeyFieldWithoutEffects(t *testing.T) {
	r := runRoot(t, "init", "POST", "http://127.0.0.1:8080/likes", "-d", `{"post":"p1"}`, "--key-field", "op_id", "--name", "likes")
	if r.code != ExitOK {
		t.Fatalf("init: exit %d\n%s", r.code, r.err)
	}
	sc, err := scenarios.Parse("init", []byte(r.out))
	if err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	if sc.Name != "likes" || sc.Operation.Key.BodyField != "op_id" || len(sc.Invariants) != 1 || sc.Invariants[0].Check != "same_response" || len(sc.Oracles) != 0 {
		t.Errorf("scenario = %+v", sc)
	}
	if !strings.Contains(r.out, "add an oracle") {
		t.Error("a scenario without --effects does not say where to add an oracle")
	}
}

func TestInitRefuses(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"POST", "https://x.example.com/c", "-H", "Authorization: Bearer sk_live_123"}, "literal value"},
		{[]string{"POST", "https://user:pw@x.example.com/c"}, "holds credentials"},
		{[]string{"POST", "https://x.example.com/c", "--effects", "/count"}, "does not use {{.Key}}"},
		{[]string{"POST", "https://x.example.com/c", "--effects", "https://other.example.com/c?k={{.Key}}"}, "the operation on"},
		{[]string{"POST", "https://x.example.com/c", "--effects", "https://admin:pw@other.example.com/c?k={{.Key}}"}, "the operation on"},
		{[]string{"POST"}, "init takes METHOD and URL"},
		{[]string{"CHARGE", "https://x.example.com/c"}, "not an HTTP method"},
		{[]string{"POST", "https://x.example.com/c", "-d", `{"a":{{.Nope}`}, "init"},
	}
	for _, c := range cases {
		r := runRoot(t, append([]string{"init"}, c.args...)...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.want) || strings.Contains(r.err+r.out, "sk_live_123") || strings.Contains(r.err, "pw@") {
			t.Errorf("init %v: exit %d, stderr %q; want %d saying %q, and no secret", c.args, r.code, r.err, ExitUsage, c.want)
		}
	}
}

func TestInitOutputFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "charges.yaml")
	r := runRoot(t, "init", "POST", "http://127.0.0.1:8080/charges", "--file", path)
	if r.code != ExitOK || !strings.Contains(r.err, "idemcheck run "+path) {
		t.Fatalf("init --file: exit %d, stderr %q", r.code, r.err)
	}
	if _, err := scenarios.LoadFile(path); err != nil {
		t.Errorf("scenarios.LoadFile(%s) = %v", path, err)
	}
	if r := runRoot(t, "init", "POST", "http://127.0.0.1:8080/charges", "-o", path); r.code != ExitUsage || !strings.Contains(r.err, "--force") {
		t.Errorf("init over an existing file: exit %d, stderr %q; want a refusal naming --force", r.code, r.err)
	}
	// -o, the old spelling, still writes the file, and says which is the one
	if r := runRoot(t, "init", "POST", "http://127.0.0.1:8080/charges", "-o", path, "--force"); r.code != ExitOK || !strings.Contains(r.err, "use --file") {
		t.Errorf("init -o --force: exit %d, stderr %q", r.code, r.err)
	}
}

func TestVersionFlag(t *testing.T) {
	v := runRoot(t, "version")
	for _, args := range [][]string{{"--version"}, {"-v"}} {
		r := runRoot(t, args...)
		if r.code != ExitOK || r.out != v.out || !strings.HasPrefix(r.out, "idemcheck ") {
			t.Errorf("idemcheck %v: exit %d, %q; want exit 0 and what 'idemcheck version' prints, %q", args, r.code, r.out, v.out)
		}
	}
}
