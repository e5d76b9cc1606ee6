package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuiltinNames(t *testing.T) {
	want := []string{
		"amqp-charges", "amqp-charges-naive",
		"charges-burnt-key",
		"charges-cross-user",
		"charges-duplicate",
		"charges-keyless",
		"charges-long-keys",
		"charges-lost-ack", "charges-lost-ack-naive",
		"charges-minted-key",
		"charges-payload-mismatch", "charges-payload-mismatch-naive",
		"charges-replay", "charges-replay-naive",
		"charges-same-payload",
		"charges-timeout", "charges-timeout-naive",
		"debit-cas", "debit-cas-naive",
		"kafka-charges", "kafka-charges-naive",
		"likes-duplicate", "likes-duplicate-naive",
		"nats-charges", "nats-charges-naive",
		"stream-charges", "stream-charges-cut", "stream-charges-cut-naive", "stream-charges-naive",
		"webhooks", "webhooks-naive",
		"webhooks-ordered", "webhooks-ordered-naive",
	}
	if diff := cmp.Diff(want, BuiltinNames()); diff != "" {
		t.Errorf("BuiltinNames() (-want +got):\n%s", diff)
	}
}

// Every built-in parses and validates with no diagnostics, names itself,
// explains itself, has faults and retries, and names its invariants and
// oracles; naive ones expect a violation, protected ones a pass.
func TestBuiltins(t *testing.T) {
	for _, name := range BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			s, err := Builtin(name)
			if err != nil {
				t.Fatalf("Builtin(%s) = %v", name, err)
			}
			if ds := s.Validate(); ds != nil {
				t.Errorf("Validate() = %v, want nil", ds)
			}
			if s.Name != name || s.Source != "builtin:"+name {
				t.Errorf("Name, Source = %q, %q, want %q, builtin:%s", s.Name, s.Source, name, name)
			}
			wantExpect := ExpectPass
			if strings.HasSuffix(name, "-naive") {
				wantExpect = ExpectViolation
			}
			if s.Expect != wantExpect {
				t.Errorf("Expect = %s, want %s", s.Expect, wantExpect)
			}
			if len(s.Description) < 200 {
				t.Errorf("Description is %d chars, want a real explanation", len(s.Description))
			}
			if len(s.Faults) == 0 || s.Retry.Attempts < 2 || len(s.Invariants) == 0 || len(s.Oracles) == 0 {
				t.Errorf("faults %d, attempts %d, invariants %d, oracles %d: want all", len(s.Faults), s.Retry.Attempts, len(s.Invariants), len(s.Oracles))
			}
			if len(s.Target) != 0 {
				t.Errorf("Target = %q, want none (the lab's address comes from --target)", s.Target)
			}
			naive := strings.Contains(s.Operation.Path, "/naive/")
			if p := s.Operation.Publish; p != nil {
				naive = strings.HasSuffix(p.Stream, ":naive") || strings.HasSuffix(p.Subject, ".naive") || strings.HasSuffix(p.Queue, ".naive") || strings.HasSuffix(p.Topic, ".naive") // the lab's naive consumer's
			}
			if naive != (wantExpect == ExpectViolation) {
				t.Errorf("path %s: naive endpoint %v, want %v", s.Operation.Path, naive, !naive)
			}
			if s.Load.Ops < 200 || s.Load.Ops > 500 || s.Load.Concurrency < 1 || s.Load.Concurrency > 16 {
				t.Errorf("load %+v, want 200..500 ops and 1..16 workers", s.Load)
			}
			yml, err := BuiltinYAML(name)
			if err != nil || !strings.Contains(string(yml), "name: "+name) {
				t.Errorf("BuiltinYAML(%s) = %.40q, %v", name, yml, err)
			}
		})
	}
}

// unpaired are the built-ins with no naive twin: against an endpoint with
// no idempotency they would pass (every op charges once, as they want).
var unpaired = []string{"charges-cross-user", "charges-same-payload", "charges-burnt-key", "charges-long-keys",
	"charges-minted-key", "charges-keyless", "charges-duplicate"}

// Each naive built-in is its protected twin with the naive endpoint: the
// same faults, retries, load and invariants.
func TestBuiltinPairs(t *testing.T) {
	for _, name := range BuiltinNames() {
		if strings.HasSuffix(name, "-naive") || slices.Contains(unpaired, name) {
			continue
		}
		p, err1 := Builtin(name)
		n, err2 := Builtin(name + "-naive")
		if err1 != nil || err2 != nil {
			t.Fatalf("Builtin(%s) = %v, %v", name, err1, err2)
		}
		if diff := cmp.Diff(p.Faults, n.Faults); diff != "" {
			t.Errorf("%s faults differ from the naive twin:\n%s", name, diff)
		}
		if diff := cmp.Diff(p.Retry, n.Retry); diff != "" {
			t.Errorf("%s retry differs from the naive twin:\n%s", name, diff)
		}
		if diff := cmp.Diff(p.Invariants, n.Invariants); diff != "" {
			t.Errorf("%s invariants differ from the naive twin:\n%s", name, diff)
		}
		if !cmp.Equal(p.Load, n.Load) || p.Operation.Key != n.Operation.Key || p.Retention != n.Retention {
			t.Errorf("%s load, key or retention differ from the naive twin", name)
		}
		if diff := cmp.Diff(p.Operation.Replay, n.Operation.Replay); diff != "" {
			t.Errorf("%s replay differs from the naive twin:\n%s", name, diff)
		}
	}
}

func TestBuiltinUnknown(t *testing.T) {
	_, err := Builtin("charges-lost-akc")
	var ds Diagnostics
	if !errors.As(err, &ds) || !strings.Contains(ds[0].Hint, "did you mean charges-lost-ack?") || !strings.Contains(ds[0].Hint, "debit-cas-naive") {
		t.Errorf("Builtin(typo) = %v, want a suggestion and the list", err)
	}
	if _, err := BuiltinYAML("../load.go"); err == nil {
		t.Errorf("BuiltinYAML(../load.go) = nil error, want one")
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mine")
	if err := os.WriteFile(file, []byte(valid), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg        string
		wantSource string // "" for an error
	}{
		{"debit-cas", "builtin:debit-cas"},
		{file, file},                             // an existing file, any name
		{filepath.Join(dir, "missing.yaml"), ""}, // a path by its extension: never a built-in
		{"nope", ""},                             // neither
	}
	for _, tt := range tests {
		s, err := Resolve(tt.arg)
		if tt.wantSource == "" {
			var ds Diagnostics
			if !errors.As(err, &ds) {
				t.Errorf("Resolve(%s) = %v, want Diagnostics", tt.arg, err)
			}
			continue
		}
		if err != nil || s.Source != tt.wantSource {
			t.Errorf("Resolve(%s) = %v, want source %s", tt.arg, err, tt.wantSource)
		}
	}
	_, err := Resolve("nope")
	if err == nil || !strings.Contains(err.Error(), "charges-lost-ack") {
		t.Errorf("Resolve(nope) = %v, want the list of built-ins", err)
	}
}

// Every file under examples/ parses and validates cleanly.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(files, func(f string) bool { return filepath.Base(f) == "my-charges.yaml" }) {
		t.Fatalf("examples = %v, want my-charges.yaml among them", files)
	}
	for _, f := range files {
		if _, err := LoadFile(f); err != nil {
			t.Errorf("LoadFile(%s) = %v", f, err)
		}
	}
}

// The annotated example in docs/scenario.md is a valid scenario.
func TestDocsExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "scenario.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## A scenario for your own API")
	if !ok {
		t.Fatal("docs/scenario.md has no section \"A scenario for your own API\"")
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("the section has no yaml block")
	}
	if _, err := Parse("docs/scenario.md", []byte(block)); err != nil {
		t.Errorf("the docs example does not parse:\n%v", err)
	}
}
