package cmd

import (
	"flag"
	"os"
	"testing"
)

// TestMain lets more of cmd's end-to-end tests run at once than the
// default -parallel (GOMAXPROCS): they mostly wait on the lab's simulated
// card processor and on timers, not on the CPU, so on 2 cores the default
// of 2 left the machine idle. An explicit -parallel wins.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			explicit = true
		}
	})
	if !explicit {
		_ = flag.Set("test.parallel", "8")
	}
	os.Exit(m.Run())
}
