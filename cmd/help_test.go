package cmd

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestHelpGolden keeps every command's --help under review: a change to
// what users read shows up in a diff.
func TestHelpGolden(t *testing.T) {
	for _, args := range [][]string{{}, {"run"}, {"check"}, {"scenarios"}, {"lab"}, {"demo"}, {"proxy"}, {"version"}, {"audit"}, {"bench"}, {"init"}} {
		name := "help-" + strings.Join(append([]string{"root"}, args...), "-") + ".txt"
		r := runMain(t, nil, append(args, "--help")...)
		if r.code != ExitOK {
			t.Fatalf("idemcheck %v --help: exit %d\n%s", args, r.code, r.err)
		}
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, []byte(r.out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./cmd -run TestHelpGolden -update creates it)", err)
		}
		if diff := cmp.Diff(string(want), r.out); diff != "" {
			t.Errorf("idemcheck %v --help changed (-want +got); rerun with -update if intended:\n%s", args, diff)
		}
	}
}

func TestLabHelpListsBugs(t *testing.T) {
	r := runMain(t, nil, "lab", "--help")
	for _, bug := range []string{"no-key", "check-then-act", "not-atomic", "key-only", "global-keys", "content-dedup", "no-fingerprint", "no-unique-index", "short-ttl", "blind-debit"} {
		if !strings.Contains(r.out, bug) {
			t.Errorf("lab --help does not list bug %s", bug)
		}
	}
}

func TestLabRejectsUnknownBug(t *testing.T) {
	r := runMain(t, nil, "lab", "--listen", "127.0.0.1:0", "--bug", "nope")
	if r.code != ExitUsage || !strings.Contains(r.err, "no-key") {
		t.Errorf("lab --bug nope: exit %d, stderr %q; want %d and the known bugs listed", r.code, r.err, ExitUsage)
	}
}

func TestScenariosCommands(t *testing.T) {
	r := runMain(t, nil, "scenarios", "list")
	if r.code != ExitOK || !strings.Contains(r.out, "charges-lost-ack-naive") || !strings.Contains(r.out, "violation") {
		t.Errorf("scenarios list: exit %d\n%s", r.code, r.out)
	}
	r = runMain(t, nil, "scenarios", "show", "charges-lost-ack")
	if r.code != ExitOK || !strings.Contains(r.out, "Idempotency-Key") {
		t.Errorf("scenarios show: exit %d\n%s", r.code, r.out)
	}
	r = runMain(t, nil, "version")
	if r.code != ExitOK || !strings.Contains(r.out, "idemcheck") {
		t.Errorf("version: exit %d\n%s", r.code, r.out)
	}
}

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"postgres://app:s3cret@db:5432/x": "postgres://app:xxxxx@db:5432/x",
		"redis://127.0.0.1:6379/0":        "redis://127.0.0.1:6379/0",
		"memory":                          "memory",
	}
	for in, want := range cases {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// A mistyped flag gets the likely one named in the hint.
func TestMistypedFlagSuggestion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "charges-lost-ack", "--taget", "http://127.0.0.1:1"}, "did you mean --target?"},
		{[]string{"run", "charges-lost-ack", "--concurency=3"}, "did you mean --concurrency?"},
		{[]string{"audit", "POST", "http://127.0.0.1:1/x", "--quiet", "1s"}, "did you mean --quiet-period?"},
		{[]string{"run", "charges-lost-ack", "--zzzzzzzzzz"}, ""},
		{[]string{"run", "charges-lost-ack", "--t", "http://127.0.0.1:1"}, "did you mean -t (--target)?"},
		{[]string{"run", "charges-lost-ack", "--x"}, ""},
	} {
		r := runMain(t, nil, tc.args...)
		if r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, r.code, ExitUsage)
		}
		if tc.want == "" && strings.Contains(r.err, "did you mean") || tc.want != "" && !strings.Contains(r.err, tc.want) {
			t.Errorf("%v: stderr %q, want %q", tc.args, r.err, tc.want)
		}
	}
}
