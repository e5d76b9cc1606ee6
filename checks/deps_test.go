package checks

import (
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
