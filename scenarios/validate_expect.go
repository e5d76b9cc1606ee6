package scenarios

import (
	"fmt"

	"github.com/idemcheck/idemcheck/history"
)

// expectations checks what the processes and settles invariants read
// beside the invariants themselves: operation.expect_reject (each a 4xx
// to an attempt that is sent, a corrected retry after it) and
// replay.then_original (which needs replay.body). A negative lease is
// refused when it is decoded, as every duration.
func (c *checker) expectations() {
	s := c.s
	if rp := s.Operation.Replay; rp != nil && rp.ThenOriginal != nil && rp.Body == "" {
		c.add("operation.replay.then_original", "then_original sends the op's own request again after another payload: it needs replay.body",
			`replay: {body: '{"amount":999}', then_original: true}, or remove then_original`)
	}
	seen := map[int]int{}
	attempts := s.Retry.Attempts
	for i, r := range s.Operation.ExpectReject {
		at := fmt.Sprintf("operation.expect_reject[%d]", i)
		switch {
		case r.Attempt == 0:
			c.add(at+".attempt", "attempt is required: the attempt of every op that is sent invalid on purpose", "attempt: 1, the first send of every op")
		case r.Attempt < 0:
			c.add(at+".attempt", fmt.Sprintf("attempt must be at least 1, got %d", r.Attempt), "attempt: 1, the first send of every op")
		case attempts > 0 && r.Attempt > attempts:
			c.add(at+".attempt", fmt.Sprintf("attempt %d is never sent: retry.attempts is %d", r.Attempt, attempts), fmt.Sprintf("attempt: 1 to %d", attempts), "retry.attempts")
		}
		if j, dup := seen[r.Attempt]; dup && r.Attempt >= 1 {
			c.add(at+".attempt", fmt.Sprintf("attempt %d is listed twice (expect_reject[%d])", r.Attempt, j), "list each attempt once")
		}
		seen[r.Attempt] = i
		switch {
		case r.Status == 409 || r.Status == 429:
			c.add(at+".status", fmt.Sprintf("%d is never a refusal (in flight, slow down): there is no need to expect it", r.Status), "status: 400, the refusal the invalid attempt gets")
			continue
		case r.Status < 400 || r.Status > 499:
			c.add(at+".status", fmt.Sprintf("status %d is not a 4xx: an expected rejection is a refusal of an invalid request", r.Status), "status: 400")
			continue
		}
		if r.Attempt >= 1 && r.Attempt < attempts && !retried(s.Retry.On, r.Status) {
			c.add(at+".status", fmt.Sprintf("a %d is not retried (retry.on), so no corrected retry follows attempt %d", r.Status, r.Attempt),
				fmt.Sprintf(`retry: {on: [fail, info, "409", "429", 5xx, "%d"]}`, r.Status), "retry.on")
		}
	}
}

// retried reports whether retry.on retries status.
func retried(on []string, status int) bool {
	return len(on) > 0 && history.Matches(on, status)
}
