package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// valid with a template that makes the first attempt invalid, its 400
// retried, and the processes invariant.
func withExpectReject(reject string) string {
	src := strings.Replace(valid, "  key: {header: Idempotency-Key}\n",
		"  key: {header: Idempotency-Key}\n  expect_reject:\n"+reject, 1)
	return src + "  - {check: processes, oracle: ledger}\nretry:\n  on: [fail, info, \"409\", \"429\", 5xx, \"400\"]\n"
}

func TestExpectReject(t *testing.T) {
	s, err := Parse("t.yaml", []byte(withExpectReject("    - {attempt: 1, status: 400}\n")+"lease: 30s\n"))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	if diff := cmp.Diff([]Rejection{{Attempt: 1, Status: 400}}, s.Operation.ExpectReject); diff != "" {
		t.Errorf("expect_reject (-want +got):\n%s", diff)
	}
	if s.Lease.Std() != 30*time.Second {
		t.Errorf("lease = %v, want 30s", s.Lease)
	}
	// processes needs no oracle, and may name an effects oracle.
	if _, err := Parse("t.yaml", []byte(valid+"  - check: processes\n")); err != nil {
		t.Errorf("Parse(processes without an oracle) = %v, want valid", err)
	}
}

func TestExpectRejectDiagnostics(t *testing.T) {
	src := withExpectReject("    - {attempt: 0, status: 400}\n    - {attempt: 2, status: 302}\n    - {attempt: 2, status: 409}\n" +
		"    - {attempt: 7, status: 400}\n    - {attempt: 3, status: 422}\n    - {atempt: 4, status: 400}\n")
	src = strings.Replace(src, "    - {attempt: 0, status: 400}\n", "    - {attempt: -1, status: 400}\n", 1)
	checkDiags(t, diagnose(t, src), []want{
		{7, "operation.expect_reject[0].attempt", "attempt must be at least 1, got -1"},
		{8, "operation.expect_reject[1].status", "status 302 is not a 4xx"},
		{9, "operation.expect_reject[2].attempt", "attempt 2 is listed twice"},
		{9, "operation.expect_reject[2].status", "409 is never a refusal"},
		{10, "operation.expect_reject[3].attempt", "attempt 7 is never sent: retry.attempts is 5"},
		{11, "operation.expect_reject[4].status", `a 422 is not retried (retry.on), so no corrected retry follows attempt 3 (hint: retry: {on: [fail, info, "409", "429", 5xx, "422"]})`},
		{12, "operation.expect_reject[5].atempt", `unknown field "atempt"`},
		{12, "operation.expect_reject[5].attempt", "attempt is required"},
	})
}

func TestThenOriginal(t *testing.T) {
	replay := "  replay: {body: '{\"amount\":2}'}\n"
	src := strings.Replace(valid, "  key: {header: Idempotency-Key}\n", "  key: {header: Idempotency-Key}\n"+replay, 1)
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	if p := s.Operation.Replay.ThenOriginal; p == nil || !*p {
		t.Errorf("then_original = %v, want true by default with a replay body", p)
	}
	off := strings.Replace(src, "'{\"amount\":2}'}", "'{\"amount\":2}', then_original: false}", 1)
	if s, err := Parse("t.yaml", []byte(off)); err != nil || *s.Operation.Replay.ThenOriginal {
		t.Errorf("then_original: false = %v, %v; want false", s, err)
	}
	same := strings.Replace(valid, "  key: {header: Idempotency-Key}\n", "  key: {header: Idempotency-Key}\n  replay: {then_original: true}\n", 1)
	checkDiags(t, diagnose(t, same+"lease: -1s\n"), []want{
		{6, "operation.replay.then_original", "it needs replay.body"},
		{17, "lease", "negative duration"},
	})
}
