package runner

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// noopServer starts a loopback HTTP server that answers 200 with a tiny JSON
// body, like bench/noop.
func noopServer(b *testing.B) *url.URL {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"ok":true}`)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

// benchScenario is the load of the speed benchmarks: a POST with a static
// body and a key header, no faults.
func benchScenario(ops, workers int) *scenarios.Scenario {
	return &scenarios.Scenario{
		Name: "bench",
		Operation: scenarios.Operation{
			Request: scenarios.Request{Method: "POST", Path: "/charges", Body: `{"amount":100,"currency":"usd"}`},
			Key:     scenarios.KeyPlace{Header: "Idempotency-Key"},
		},
		Load:  scenarios.Load{Ops: ops, Concurrency: workers},
		Retry: scenarios.Retry{Attempts: 1, On: scenarios.DefaultRetryOn()},
	}
}

// BenchmarkRunClosed64 drives an in-process loopback no-op server with 64
// workers (one op = one attempt = one b.N). The server shares the process,
// so its allocations count too; BenchmarkAttempt isolates the runner's.
func BenchmarkRunClosed64(b *testing.B) {
	u := noopServer(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	h, err := Run(context.Background(), benchScenario(b.N, 64), Options{Target: u, Seed: 1})
	el := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if len(h.Attempts) != b.N {
		b.Fatalf("%d attempts, want %d", len(h.Attempts), b.N)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
}

// canned is a RoundTripper answering 200 with a tiny body, without a
// network: what is left is the runner's own work per attempt.
type canned struct{}

type cannedBody struct{ strings.Reader }

func (*cannedBody) Close() error { return nil }

func (canned) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	b := &cannedBody{}
	b.Reset(`{"ok":true}`)
	return &http.Response{StatusCode: 200, Body: b, Header: http.Header{}, Request: req}, nil
}

// BenchmarkAttempt is the runner's cost per attempt (request building,
// recording, fingerprinting) with a transport that costs almost nothing.
func BenchmarkAttempt(b *testing.B) {
	u := &url.URL{Scheme: "http", Host: "127.0.0.1:1"}
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := Run(context.Background(), benchScenario(b.N, 1), Options{Target: u, Seed: 1, Transport: canned{}}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHistoryMemory records b.N synthetic attempts (one per op, with
// a key each) the way workers do, merges them and reports the live heap per
// attempt while the load runs (the workers' logs) and of the resulting
// history. Run it with -benchtime=1000000x for the
// figure at a million attempts.
func BenchmarkHistoryMemory(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	w := (&run{identity: identity{seed: 1}, ctx: context.Background()}).newWorker()
	// While the load runs: the workers' logs.
	for i := range b.N {
		w.pcg.Seed(1, uint64(i))
		w.rec.ops.add(history.Op{ID: i, Key: scenarios.NewKey(w.rnd)})
		w.rec.attempts.add(history.Attempt{Op: i, N: 1, Outcome: history.OK, Status: 201,
			Intended: time.Duration(i), Start: time.Duration(i), End: time.Duration(i + 1000), Fingerprint: history.Fingerprint(i + 1)})
	}
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	b.ReportMetric(float64(int64(during.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "bytes/attempt-during-load")
	ops, attempts := merge([]*recorder{&w.rec})
	h := &history.History{Ops: ops, Attempts: attempts}
	h.Sort()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "bytes/attempt")
	runtime.KeepAlive(h)
}

// BenchmarkFingerprint is the cost of fingerprinting a charge answer: the
// streaming canonicaliser alone, with a volatile path, and with fields kept.
func BenchmarkFingerprint(b *testing.B) {
	body := []byte(`{"id":"ch_123","amount":100,"currency":"usd","customer":"cus_42","status":"succeeded","created":"2024-05-01T10:00:00Z"}`)
	cases := []struct {
		name     string
		fields   map[string]string
		volatile []string
	}{
		{name: "plain"},
		{name: "volatile", volatile: []string{"$.created"}},
		{name: "fields+volatile", fields: map[string]string{"id": "$.id"}, volatile: []string{"$.created"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			sc := benchScenario(1, 1)
			sc.Response.Fields, sc.Response.Volatile = c.fields, c.volatile
			r, err := compile(sc, Options{Target: &url.URL{Scheme: "http", Host: "x"}})
			if err != nil {
				b.Fatal(err)
			}
			w := r.newWorker()
			b.ReportAllocs()
			for b.Loop() {
				r.inspect(&w.session, body)
			}
		})
	}
}
