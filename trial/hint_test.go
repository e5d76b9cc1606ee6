package trial

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/runner"
)

// TestErrorsCarryHints: the errors a run's caller shows say what to do,
// through a Hint method found on the error's chain as it is wrapped.
func TestErrorsCarryHints(t *testing.T) {
	t.Parallel()
	var claim error = &ClaimError{Ran: true}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&TargetError{Target: "http://127.0.0.1:8080", Loopback: true, Err: errors.New("refused")}, "idemcheck lab --listen 127.0.0.1:8080"},
		{&TargetError{Target: "http://api.example.com", Err: errors.New("refused")}, "is the API running at http://api.example.com?"},
		{&TargetError{Target: "http://127.0.0.1:8443", Loopback: true, TLS: true, Err: errors.New("tls")}, "use https://"},
		{&TargetError{Target: "http://127.0.0.1:22", NotHTTP: true, Err: errors.New("ssh")}, "not in HTTP"},
		{&ReadingError{Oracle: "ledger", Err: errors.New("down")}, "check the oracle's request"},
		{&runner.SetupError{Field: "setup[0]", Err: &runner.StatusError{Status: 500}}, "setup request"},
		{claim, "prepare a new run"},
		{&ClaimError{}, "its own index"},
		{ErrTampered, RunKeyEnv},
		{ErrRunKey, RunKeyEnv},
		{ErrRunExists, "a directory of its own"},
		{ErrNoManifest, "--phase prepare"},
		{ErrManifest, "--phase prepare"},
		{ErrNoReadings, "report merge"},
		{ErrScenarioTarget, "drop --target"},
		{history.ErrTruncated, "run it again"},
		{history.ErrOldFormat, "--key-nonce"},
	} {
		wrapped := fmt.Errorf("reading the run: %w", tc.err)
		var h interface{ Hint() string }
		if !errors.As(wrapped, &h) || !strings.Contains(h.Hint(), tc.want) {
			t.Errorf("%v: no hint naming %q on its chain", tc.err, tc.want)
		}
	}
}
