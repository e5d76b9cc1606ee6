package storebench

import "testing"

func TestReport(t *testing.T) {
	ps := []Primitive{{Name: "set_nx_px", Concurrency: 1, P50US: 80, P99US: 200, OpsPerS: 9000}, {Name: "set_nx_px", Concurrency: 8, P50US: 120}}
	r := (&RedisResult{Primitives: ps, BytesPerRecord: 400}).Report()
	if len(r.Primitives) != 2 || r.Primitives[0].P99US != 200 || r.BytesPerRecord != 400 || r.Roundtrip != 80 {
		t.Errorf("RedisResult.Report() = %+v; want both primitives, 400 bytes, roundtrip 80µs", r)
	}
	p := (&PostgresResult{Primitives: ps[1:], BytesPerRecord: 90}).Report()
	if len(p.Primitives) != 1 || p.BytesPerRecord != 90 || p.Roundtrip != 0 {
		t.Errorf("PostgresResult.Report() = %+v; want one primitive, 90 bytes, no roundtrip", p)
	}
}
