// Package storebench measures an idempotency store's own cost, without an
// API in front: the latency and throughput of each dedup primitive on
// Redis (the lock, the replay read, the lab's one-roundtrip
// lock-or-return-cached script, storing the response) and on Postgres (the
// key insert, the key and ledger transaction), at several concurrencies;
// the memory a stored record takes; and the capacity a retention window
// needs at a request rate.
//
//	primitive × concurrency ──> workers, each in a loop for Duration
//	                               │ per-worker HdrHistogram (ns)
//	                               v
//	                          merged ──> p50, p99, ops/s
//
// It writes only under its own namespace (a Redis key prefix, a Postgres
// schema) and deletes what it wrote before returning. It never prints:
// RedisResult.Report and PostgresResult.Report give its figures to reports.
package storebench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"net/url"
)

// Options say what to measure.
type Options struct {
	// Concurrency lists the numbers of concurrent clients to measure each
	// primitive at (default 1, 8, 64).
	Concurrency []int
	// Duration is how long each primitive runs at each concurrency
	// (default 5s).
	Duration time.Duration
	// ValueSize is the size of the stored response body, bytes (default
	// 256).
	ValueSize int
	// Samples is how many records MEMORY USAGE is averaged over (default
	// 100).
	Samples int
	// OnStep, when not nil, hears each primitive and concurrency as it
	// starts (progress).
	OnStep func(store, primitive string, concurrency int)
}

func (o Options) defaults() Options {
	if len(o.Concurrency) == 0 {
		o.Concurrency = []int{1, 8, 64}
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.ValueSize <= 0 {
		o.ValueSize = 256
	}
	if o.Samples <= 0 {
		o.Samples = 100
	}
	return o
}

// Primitive is one primitive's figures at one concurrency.
type Primitive struct {
	Name        string  `json:"name"`
	Concurrency int     `json:"concurrency"`
	P50US       float64 `json:"p50_us"`
	P99US       float64 `json:"p99_us"`
	OpsPerS     float64 `json:"ops_per_s"`
	Errors      int64   `json:"-"` // failed calls, left out of the figures
}

// opBound is how long past a step's end an operation started within it
// may take: a store that stops answering holds the step this long at most,
// and the operation is then counted as failed.
const opBound = 10 * time.Second

// measure runs op from c goroutines for d and returns its figures. op gets
// the worker and a sequence number unique to the worker. Each worker
// starts operations until d has passed, and every operation started is
// let finish and counted (within bound past d: opBound): cutting those still in flight
// at the end would drop the slowest more often than the rest, and a step
// stalled by a loaded machine would measure nothing.
func measure(ctx context.Context, name string, c int, d, bound time.Duration, op func(ctx context.Context, worker, seq int) error) (Primitive, error) {
	begin := time.Now()
	end := begin.Add(d)
	opCtx, cancel := context.WithDeadline(ctx, end.Add(bound))
	defer cancel()
	hs := make([]*hdrhistogram.Histogram, c)
	errs := make([]int64, c)
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range c {
		hs[w] = newHist()
		wg.Go(func() {
			for seq := 0; opCtx.Err() == nil && time.Now().Before(end); seq++ {
				t := time.Now()
				err := op(opCtx, w, seq)
				took := time.Since(t)
				if ctx.Err() != nil {
					return // interrupted: not a figure
				}
				if err != nil {
					if opCtx.Err() != nil {
						err = fmt.Errorf("no answer within %v of the step's end: %w", bound, err)
					}
					errs[w]++
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				_ = hs[w].RecordValue(min(took.Nanoseconds(), hs[w].HighestTrackableValue()))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	all := newHist()
	var nerr int64
	for w := range c {
		all.Merge(hs[w])
		nerr += errs[w]
	}
	p := Primitive{Name: name, Concurrency: c, Errors: nerr}
	if all.TotalCount() == 0 {
		if firstErr == nil {
			firstErr = errors.New("no operation completed")
		}
		return p, fmt.Errorf("%s at concurrency %d: %w", name, c, firstErr)
	}
	p.P50US = float64(all.ValueAtQuantile(50)) / 1000
	p.P99US = float64(all.ValueAtQuantile(99)) / 1000
	p.OpsPerS = float64(all.TotalCount()) / elapsed.Seconds()
	return p, nil
}

// newHist is a histogram of ns from 1 ns to a minute, 3 digits.
func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Minute), 3)
}

// namespace is a fresh name for what one bench writes: "idemcheck_bench_"
// and 12 random base32 characters, lower case.
func namespace() string {
	return "idemcheck_bench_" + strings.ToLower(rand.Text()[:12])
}

// Capacity is what a retention window holds at a request rate.
type Capacity struct {
	RPS     int   `json:"rps"`
	TTLS    int64 `json:"ttl_s"`
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// RoundtripsPerRequest is how many store roundtrips one protected
	// request makes in the common case (a new key).
	RoundtripsPerRequest int `json:"roundtrips_per_request"`
	// StoreOpsPerS is RPS × RoundtripsPerRequest: the commands per second
	// the store must serve.
	StoreOpsPerS int64 `json:"store_ops_per_s"`
}

// Plan is the capacity for rps requests per second, each keeping one
// record of bytesPerRecord for ttl and making roundtrips store calls.
func Plan(rps int, ttl time.Duration, bytesPerRecord int64, roundtrips int) Capacity {
	ttlS := int64(ttl / time.Second)
	records := int64(rps) * ttlS
	return Capacity{
		RPS: rps, TTLS: ttlS, Records: records, Bytes: records * bytesPerRecord,
		RoundtripsPerRequest: roundtrips, StoreOpsPerS: int64(rps) * int64(roundtrips),
	}
}

// body is a JSON response body of about n bytes, as a charge's would be.
func body(n int) []byte {
	const head = `{"id":"ch_0000000000000000","object":"charge","amount":100,"currency":"usd","status":"succeeded","pad":"`
	const tail = `"}`
	pad := max(n-len(head)-len(tail), 0)
	return []byte(head + strings.Repeat("x", pad) + tail)
}

// ErrURL is wrapped by the error of a store URL that does not parse: a
// usage error, nothing was sent.
var ErrURL = errors.New("bad store URL")

// urlProblem says what is wrong with a store URL the driver refused,
// without quoting it: the drivers' messages quote the URL, password
// included.
func urlProblem(raw string, err error) string {
	var esc url.EscapeError
	u, perr := url.Parse(raw)
	switch {
	case errors.As(perr, &esc):
		return "a '%' not followed by two hexadecimal digits (write a literal % in a password as %25)"
	case perr != nil:
		return "it does not parse"
	case u.Scheme == "":
		return "it has no scheme (redis://host:port/db, postgres://user@host:port/db)"
	}
	var scheme *url.Error
	if errors.As(err, &scheme) {
		return "it does not parse"
	}
	return "the driver refused it (check its scheme, host, port and database)"
}
