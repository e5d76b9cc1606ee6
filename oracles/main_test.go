package oracles

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// TestMain gives the tests that ask for Postgres a database each on one
// server they share: a server of their own each cost about two seconds of
// CPU.
func TestMain(m *testing.M) { os.Exit(testsvc.Main(m)) }
