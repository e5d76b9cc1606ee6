package cmd

import (
	"os"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/childlab"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// TestMain lets more of cmd's end-to-end tests run at once than the
// default -parallel (GOMAXPROCS): they mostly wait on the lab's simulated
// card processor and on timers, not on the CPU (the package uses under
// half of 2 cores), so on 2 cores the default of 2 left the machine idle,
// 8 and 16 left tests queued behind others that wait: 24 takes the
// package from 22 s to 18 s. More (48: 16 s) loads the 2 cores enough
// to close the windows of the lab's timing bugs (narrow-race,
// shared-record) that the audit tests expect caught. Under -race the
// tests are bound by the CPU instead, and 16 at once are plenty. An
// explicit -parallel wins.
func TestMain(m *testing.M) {
	childlab.Serve() // the lab C28's tests kill and restart, when this process is one
	if testenv.Race {
		testenv.Parallel(16)
	} else {
		testenv.Parallel(24)
	}
	// The demo's A/B of what the protection costs runs a tenth as long in
	// the fast suite: its tests read that the costs are shown, not what
	// they are. The long suite measures as a user's demo does.
	if !testenv.Long() {
		demoAB.Duration, demoAB.Warmup = 200*time.Millisecond, 0
	}
	os.Exit(testsvc.Main(m)) // the long suite's labs on Redis+Postgres share one Postgres
}
