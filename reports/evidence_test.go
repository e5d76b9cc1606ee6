package reports

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// The evidence line of an attempt shows the answer headers that say how
// the server treated the key, in a fixed order, and nothing when it kept
// none; the HTML evidence shows them too.
func TestEvidenceHeaders(t *testing.T) {
	a := history.Attempt{N: 2, Outcome: history.OK, Status: 201, End: 3 * time.Millisecond,
		Fields:  map[string]string{"id": "ch_1"},
		Headers: map[string]string{"Retry-After": "1", "Content-Type": "application/json", "Idempotency-Key": "mk_1", "Idempotent-Replayed": "true", "Location": "/charges/ch_1"}}
	want := "201 id=ch_1 [Idempotency-Key: mk_1, Idempotent-Replayed: true, Location: /charges/ch_1, Retry-After: 1] in 3.0ms"
	if got := attemptLine(a); got != want {
		t.Errorf("attemptLine = %q, want %q", got, want)
	}
	if got, want := answerText(a), "201 id=ch_1 [Idempotency-Key: mk_1, Idempotent-Replayed: true, Location: /charges/ch_1, Retry-After: 1]"; got != want {
		t.Errorf("answerText = %q, want %q", got, want)
	}
	a.Headers = map[string]string{"Content-Type": "application/json"}
	if got, want := attemptLine(a), "201 id=ch_1 in 3.0ms"; got != want {
		t.Errorf("attemptLine without idempotency headers = %q, want %q", got, want)
	}
}
