package storebench

import "github.com/idemcheck/idemcheck/reports"

// Report is r's figures as reports show them, one roundtrip's cost the
// p50 of set_nx_px at concurrency 1.
func (r *RedisResult) Report() *reports.StoreResult {
	out := report(r.Primitives, r.BytesPerRecord)
	out.Roundtrip = r.Roundtrip("set_nx_px")
	return out
}

// Report is p's figures as reports show them.
func (p *PostgresResult) Report() *reports.StoreResult { return report(p.Primitives, p.BytesPerRecord) }

func report(ps []Primitive, bytesPerRecord int64) *reports.StoreResult {
	r := &reports.StoreResult{BytesPerRecord: bytesPerRecord}
	for _, p := range ps {
		r.Primitives = append(r.Primitives, reports.StorePrimitive(p))
	}
	return r
}
