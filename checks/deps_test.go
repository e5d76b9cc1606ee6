package checks

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The judgement stays pure: checks and reports import no HTTP client, no
// database driver and no network code, now and after later work.
func TestNoIODependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool on PATH to list dependencies: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "../checks", "../reports").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		bad := dep == "net/http" || dep == "net" || dep == "database/sql" ||
			strings.Contains(dep, "pgx") || strings.Contains(dep, "redis") || strings.Contains(dep, "jsonpath")
		if bad {
			t.Errorf("checks or reports depend on %s", dep)
		}
	}
}

// TestLayering holds the spine's layering: trial judges and runs without
// the renderers (reports), cmd reaches the databases only through lab and
// the oracles (no driver of its own), and the audit sends through the
// runner's client (no http.Client or transport of its own).
func TestLayering(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool on PATH to list dependencies: %v", err)
	}
	list := func(args ...string) []string {
		out, err := exec.Command(goBin, append([]string{"list"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %v: %v\n%s", args, err, out)
		}
		return strings.Fields(string(out))
	}
	for _, dep := range list("-deps", "../trial") {
		if strings.HasSuffix(dep, "/idemcheck/reports") {
			t.Errorf("trial depends on reports")
		}
	}
	for _, imp := range list("-f", `{{join .Imports " "}}`, "../cmd") {
		if strings.Contains(imp, "pgx") || strings.Contains(imp, "go-redis") {
			t.Errorf("cmd imports %s itself", imp)
		}
	}
	src, err := exec.Command(goBin, "list", "-f", `{{join .GoFiles " "}}`, "../audit").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(src)) {
		b, err := os.ReadFile("../audit/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"http.Client{", "http.Transport{", "DefaultTransport"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("audit/%s builds its own HTTP client (%s): it must send through the runner's", f, bad)
			}
		}
	}
}
