package lab

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// TestMain gives the tests that ask for Postgres a database each on one
// server they share: a server of their own each cost about two seconds of
// CPU.
func TestMain(m *testing.M) {
	testenv.Parallel(4) // the backend tests wait on Postgres and Redis as much as they compute
	os.Exit(testsvc.Main(m))
}
