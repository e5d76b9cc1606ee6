package openapi

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// bigSpec writes a spec of n mutating operations (n/3 paths of POST, PUT
// and DELETE), each with a key header, a path parameter and a body of
// shared schemas nested five deep, and returns its path.
func bigSpec(tb testing.TB, n int) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString("openapi: 3.1.0\ninfo: {title: big, version: '1'}\ncomponents:\n  parameters:\n    Key: {name: Idempotency-Key, in: header, required: true, schema: {type: string}}\n  schemas:\n")
	for i := range 50 {
		req := "id, amount, when, tags"
		if i%5 != 4 {
			req += ", child" // chains of 5 nested objects
		}
		fmt.Fprintf(&b, "    S%d:\n      type: object\n      required: [%s]\n      properties:\n        id: {type: string, format: uuid}\n        amount: {type: integer, minimum: 1, maximum: 1000}\n        when: {type: string, format: date-time}\n        tags: {type: array, minItems: 1, items: {type: string, enum: [a, b]}}\n        child: {$ref: '#/components/schemas/S%d'}\n", i, req, (i+1)%50)
	}
	b.WriteString("    S49x: {type: object}\npaths:\n")
	for i := range n / 3 {
		fmt.Fprintf(&b, "  /r%d/{id}:\n    parameters: [{name: id, in: path, required: true, schema: {type: string}, example: r%d}]\n", i, i)
		for _, m := range []string{"post", "put", "delete"} {
			fmt.Fprintf(&b, "    %s:\n      operationId: %s%d\n      parameters: [{$ref: '#/components/parameters/Key'}]\n      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/S%d'}}}}\n      responses: {'200': {description: ok}}\n", m, m, i, i%40)
		}
	}
	p := filepath.Join(tb.TempDir(), "big.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkPlan300 loads and plans a spec of 300 operations, as
// audit --openapi --dry-run does (issue: under 2 s and 200 MB). It
// reports the peak heap of one load and plan (heap-MB) besides B/op.
func BenchmarkPlan300(b *testing.B) {
	p := bigSpec(b, 300)
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		s, err := Load(context.Background(), p, nil)
		if err != nil {
			b.Fatal(err)
		}
		pl, err := s.Plan(PlanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(pl.Ops) != 300 {
			b.Fatalf("planned %d of 300 (skipped %v)", len(pl.Ops), pl.Skipped[:min(3, len(pl.Skipped))])
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		peak = max(peak, after.HeapInuse)
	}
	b.ReportMetric(float64(peak)/(1<<20), "heap-MB")
}

// writeSpec is where TestBigSpecPlans copies a spec of -spec-ops
// operations for bench/openapi-dry-run.sh.
var (
	writeSpec = flag.String("write-spec", "", "write the benchmark's spec here (bench/openapi-dry-run.sh)")
	specOps   = flag.Int("spec-ops", 300, "with -write-spec: its operations")
)

// TestBigSpecPlans keeps the benchmark's spec honest in the fast suite.
func TestBigSpecPlans(t *testing.T) {
	if *writeSpec != "" {
		b, err := os.ReadFile(bigSpec(t, *specOps))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*writeSpec, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Load(context.Background(), bigSpec(t, 30), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Ops) != 30 || len(p.Skipped) != 0 {
		t.Fatalf("planned %d, skipped %v", len(p.Ops), p.Skipped)
	}
}
