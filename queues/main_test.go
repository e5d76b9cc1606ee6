package queues_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

func TestMain(m *testing.M) {
	// the consumer tests mostly wait: for a claim's idle time, for a
	// redelivery, for the stream to drain
	testenv.Parallel(8)
	os.Exit(testsvc.Main(m))
}
