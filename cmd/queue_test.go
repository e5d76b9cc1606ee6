package cmd

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// TestRunStreamBuiltins runs the stream built-ins as a user does: the lab
// with --consumer on a real Redis, then idemcheck run with the broker as
// --target and the lab as --service. The protected consumer holds
// exactly_once (exit 0), the naive one is caught as expected (exit 0);
// without --service the run says what is missing (exit 2).
func TestRunStreamBuiltins(t *testing.T) {
	t.Parallel()
	broker := testsvc.Redis(t)
	service := startLabsFrom(t, memoryBackend(), LabOptions{Consumer: broker, ProcessorLatency: 20e6})[0]
	for _, name := range []string{"stream-charges", "stream-charges-naive"} {
		r := runMain(t, nil, "run", name, "--target", broker, "--service", service, "--seed", "3", "-q")
		if r.code != ExitOK || !strings.Contains(r.out, "exactly_once") {
			t.Errorf("run %s: exit %d, want 0\n%s\n%s", name, r.code, r.out, r.err)
		}
	}
	r := runMain(t, nil, "run", "stream-charges", "--target", broker, "-q")
	if r.code != ExitUsage || !strings.Contains(r.err, "--service") {
		t.Errorf("run without --service: exit %d, want %d naming --service\n%s", r.code, ExitUsage, r.err)
	}
}
