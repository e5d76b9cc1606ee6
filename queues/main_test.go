package queues_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testsvc"
)

func TestMain(m *testing.M) { os.Exit(testsvc.Main(m)) }
