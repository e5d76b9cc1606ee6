package abtest

import (
	"testing"

	"github.com/idemcheck/idemcheck/scenarios"
)

func TestArmSpecs(t *testing.T) {
	op := scenarios.RequestSpec{Request: scenarios.Request{Method: "POST", Path: "/charges", Body: `{"amount":1}`},
		Key: scenarios.KeyPlace{Header: "Idempotency-Key"}, Targets: []string{"http://127.0.0.1:8080"}}
	a, b := ArmSpecs(op, "/naive/charges", false)
	if a.Name != "bench-a" || b.Name != "bench-b" || a.Request.Path != "/charges" || b.Request.Path != "/naive/charges" || b.Key != op.Key {
		t.Errorf("ArmSpecs(baseline path) = %+v, %+v; want bench-a to /charges, bench-b to /naive/charges with the key", a, b)
	}
	for _, arm := range []scenarios.RequestSpec{a, b} {
		if arm.Retry.Attempts != 1 || len(arm.Invariants) != 1 || arm.Invariants[0].Check != "same_response" {
			t.Errorf("%s: retry %+v, invariants %+v; want one attempt, same_response only", arm.Name, arm.Retry, arm.Invariants)
		}
		if _, err := scenarios.FromRequest("test", arm); err != nil {
			t.Errorf("%s does not build: %v", arm.Name, err)
		}
	}
	if _, b := ArmSpecs(op, "", true); !b.Key.None || b.Request.Path != "/charges" {
		t.Errorf("ArmSpecs(no key): B = %+v, want the same path without its key", b)
	}
}
