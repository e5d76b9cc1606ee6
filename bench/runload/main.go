// Command runload drives a target with idemcheck's runner, closed model, no
// faults, and prints the request rate, the latency and the memory the
// recorded history takes per attempt. bench/generator-compare.sh runs it
// beside wrk and vegeta against the same no-op server. The runner sends
// through its own HTTP/1.1 client (internal/h1) by default; -client net
// sends through net/http's Transport instead, for comparison.
//
//	go run ./bench/runload -target http://127.0.0.1:8089 -workers 64 -duration 10s
//	go run ./bench/runload -client net -target http://127.0.0.1:8089
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

func main() {
	target := flag.String("target", "http://127.0.0.1:8089", "base URL of the target")
	workers := flag.Int("workers", 64, "closed-model workers")
	duration := flag.Duration("duration", 10*time.Second, "how long to send")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	client := flag.String("client", "h1", "HTTP client: h1 (internal/h1, the runner's default) or net (net/http's Transport)")
	faulty := flag.Float64("faults", 0, "inject faults into this share of attempts, split between drop_ack and duplicate (2 copies), to measure the fault transport's cost; retries off, so each op is one attempt")
	flag.Parse()
	if err := run(*target, *workers, *duration, *cpuprofile, *client, *faulty); err != nil {
		fmt.Fprintln(os.Stderr, "runload:", err)
		os.Exit(1)
	}
}

func run(target string, workers int, duration time.Duration, cpuprofile, client string, faulty float64) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	opts := runner.Options{Target: u, Seed: 1}
	switch client {
	case "h1":
		// nil: the runner's own transport, internal/h1
	case "net":
		tr := runner.NewTransport(workers)
		defer tr.CloseIdleConnections()
		opts.Transport = tr
	default:
		return fmt.Errorf("-client %q: want net or h1", client)
	}
	sc := &scenarios.Scenario{
		Name: "runload",
		Operation: scenarios.Operation{
			Request: scenarios.Request{Method: "POST", Path: "/charges", Body: `{"amount":100,"currency":"usd","customer":"cus_1"}`},
			Key:     scenarios.KeyPlace{Header: "Idempotency-Key"},
		},
		Load:  scenarios.Load{Duration: scenarios.Duration(duration), Concurrency: workers},
		Retry: scenarios.Retry{Attempts: 1, On: scenarios.DefaultRetryOn()},
	}
	if faulty > 0 {
		sc.Faults = []scenarios.Fault{{Kind: "drop_ack", Rate: faulty / 2}, {Kind: "duplicate", Rate: faulty / 2, Copies: 2}}
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	h, err := runner.Run(context.Background(), sc, opts)
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := len(h.Attempts)
	ok, other, info, fail, faults := 0, 0, 0, 0, 0
	errs := map[string]int{}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		switch {
		case a.Acked():
			ok++
		case a.Outcome == history.OK:
			other++
		case a.Outcome == history.Info:
			info++
		default:
			fail++
		}
		if a.Err != "" && a.Fault == "" && len(errs) < 5 {
			errs[a.Err]++
		}
		if a.Fault != "" {
			faults++
		}
	}
	if faults > 0 {
		fmt.Printf("faults       %d attempts (%.1f%%)\n", faults, 100*float64(faults)/float64(max(n, 1)))
	}
	att := measure.Of(h).Latency.Attempt
	fmt.Printf("attempts     %d (%d ok 2xx, %d other statuses, %d info, %d fail) in %v\n", n, ok, other, info, fail, elapsed.Round(time.Millisecond))
	for e, k := range errs {
		fmt.Printf("error        %d× %s\n", k, e)
	}
	fmt.Printf("req/s        %.0f\n", float64(n)/elapsed.Seconds())
	fmt.Printf("latency      p50 %.2fms  p99 %.2fms  max %.2fms\n", measure.MS(att.P50), measure.MS(att.P99), measure.MS(att.Max))
	fmt.Printf("bytes/attempt %.0f (live heap of the history after GC)\n",
		float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(max(n, 1)))
	runtime.KeepAlive(h)
	return nil
}
