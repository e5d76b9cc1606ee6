package cmd

import (
	"os"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// TestMain lets more of cmd's end-to-end tests run at once than the
// default -parallel (GOMAXPROCS): they mostly wait on the lab's simulated
// card processor and on timers, not on the CPU (the package uses under
// half of 2 cores), so on 2 cores the default of 2 left the machine idle,
// and 8 left tests queued behind others that wait. An explicit -parallel
// wins.
func TestMain(m *testing.M) {
	testenv.Parallel(16)
	// The demo's A/B of what the protection costs runs a tenth as long in
	// the fast suite: its tests read that the costs are shown, not what
	// they are. The long suite measures as a user's demo does.
	if !testenv.Long() {
		demoAB.Duration, demoAB.Warmup = 200*time.Millisecond, 0
	}
	os.Exit(testsvc.Main(m)) // the long suite's labs on Redis+Postgres share one Postgres
}
