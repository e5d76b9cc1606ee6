package scenarios

import (
	"slices"
	"testing"
)

// The literal query values of every path that may be credentials are
// found, unescaped: by name, or by length; values a template writes are
// not, nor short words such as "true".
func TestQueryValues(t *testing.T) {
	sc := &Scenario{Operation: Operation{Request: Request{Path: "/pay?api_key=s3cr%2Ft&k={{.Key}}&flag&empty=&captured=true&ref=order-2026-000123"}}}
	sc.Oracles = append(sc.Oracles, Oracle{Effects: &EffectsOracle{PerKey: &Probe{Request: Request{Path: "/count?token=ab+cd&key={{.Key}}"}}}})
	got := sc.QueryValues()
	want := []string{"s3cr/t", "order-2026-000123", "ab cd"}
	if !slices.Equal(got, want) {
		t.Errorf("QueryValues() = %q, want %q", got, want)
	}
}
