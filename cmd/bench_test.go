package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/abtest"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// abServer serves abHandler on a loopback port.
func abServer(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	h, n, keyed := abHandler(delay)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, n, keyed
}

// abHandler answers /a after delay, /b at once, and /fail with a 500; it
// counts requests and keyed requests.
func abHandler(delay time.Duration) (http.Handler, *atomic.Int64, *atomic.Int64) {
	var n, keyed atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.Header.Get("Idempotency-Key") != "" {
			keyed.Add(1)
		}
		switch r.URL.Path {
		case "/a":
			time.Sleep(delay)
		case "/fail":
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	return h, &n, &keyed
}

// benchInBubble runs `idemcheck bench overhead ARGS` inside a
// testing/synctest bubble, its requests served by h with no socket: the
// fake clock makes the arms' latencies exactly the handler's, and no
// other test's load can stall an arm below its rate. Flags are parsed as
// Main parses them; only the transport is swapped.
func benchInBubble(t *testing.T, h http.Handler, args ...string) result {
	t.Helper()
	var r result
	synctest.Test(t, func(t *testing.T) {
		var out, errb bytes.Buffer
		f := &Factory{Streams: Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Getenv: func(string) string { return "" }}
		c := NewCmdBenchOverhead(f, func(ctx context.Context, o *BenchOverheadOptions) error {
			o.Transport = testenv.HandlerTransport(h)
			return benchOverheadRun(ctx, o)
		})
		c.SilenceUsage, c.SilenceErrors = true, true // as under the root
		c.SetArgs(args)
		c.SetOut(&out)
		c.SetErr(&errb)
		code := report(&errb, c.Execute())
		r = result{code, out.String(), errb.String()}
	})
	return r
}

// quickAB are the flags of a short A/B.
var quickAB = []string{"--rate", "100", "--duration", "400ms", "--warmup", "100ms", "--block", "100ms", "--resamples", "200"}

func TestBenchOverheadUsage(t *testing.T) {
	t.Parallel()
	srv, n, _ := abServer(t, 0)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"no baseline", []string{srv.URL + "/a"}},
		{"two baselines", []string{srv.URL + "/a", "--baseline-path", "/b", "--baseline-no-key"}},
		{"baseline not a path", []string{srv.URL + "/a", "--baseline-path", "b"}},
		{"bad budget", []string{srv.URL + "/a", "--baseline-no-key", "--max-overhead", "p75=3ms"}},
		{"bad rate", []string{srv.URL + "/a", "--baseline-no-key", "--rate", "fast"}},
		{"bad format", []string{srv.URL + "/a", "--baseline-no-key", "--format", "xml"}},
		{"over max-requests", []string{srv.URL + "/a", "--baseline-no-key", "--rate", "100", "--max-requests", "10"}},
	} {
		r := runMain(t, nil, append([]string{"bench", "overhead", "POST"}, c.args...)...)
		if r.code != ExitUsage {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, r.code, ExitUsage, r.err)
		}
	}
	r := runMain(t, nil, append([]string{"bench", "overhead", "POST", srv.URL + "/a", "--baseline-path", "/b", "--dry-run"}, quickAB...)...)
	if r.code != ExitOK || !strings.Contains(r.err, "about 100 mutating requests") || !strings.Contains(r.err, "dry run") {
		t.Errorf("--dry-run: exit %d, stderr %q; want 0 and the count stated", r.code, r.err)
	}
	if n.Load() != 0 {
		t.Errorf("%d requests sent by usage errors and a dry run, want 0", n.Load())
	}
}

// TestBenchOverheadJSON: the JSON document's shape, the .hgrm files, and
// arm A keyed where B is not. On the fake clock (benchInBubble), so that
// both arms hold the rate whatever the machine's load: the verdict is
// "within", never "unclear".
func TestBenchOverheadJSON(t *testing.T) {
	t.Parallel()
	h, n, keyed := abHandler(0)
	dir := t.TempDir()
	r := benchInBubble(t, h, append([]string{"POST", "http://bench.test/a", "-d", `{"amount":100}`,
		"--baseline-no-key", "--format", "json", "--out", dir}, quickAB...)...)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.out)
	}
	keys := func(m any) []string {
		var ks []string
		for k := range m.(map[string]any) {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	if got, want := keys(doc), []string{"arms", "delta", "format_version", "rate", "verdict"}; !cmp.Equal(got, want) {
		t.Errorf("top-level keys %v, want %v", got, want)
	}
	arms := doc["arms"].(map[string]any)
	for _, arm := range []string{"a", "b"} {
		if got, want := keys(arms[arm]), []string{"ops", "ops_per_s", "p50_ms", "p90_ms", "p999_ms", "p99_ms"}; !cmp.Equal(got, want) {
			t.Errorf("arms.%s keys %v, want %v", arm, got, want)
		}
	}
	delta := doc["delta"].(map[string]any)
	if got, want := keys(delta), []string{"p50", "p90", "p99", "p999"}; !cmp.Equal(got, want) {
		t.Errorf("delta keys %v, want %v", got, want)
	}
	ci := delta["p50"].(map[string]any)["ci95_ms"].([]any)
	if len(ci) != 2 {
		t.Errorf("delta.p50.ci95_ms = %v, want [lo, hi]", ci)
	}
	if doc["format_version"].(float64) != 1 || doc["rate"].(float64) != 100 || doc["verdict"] != "within" {
		t.Errorf("format_version %v rate %v verdict %v; want 1, 100, within (no budget)", doc["format_version"], doc["rate"], doc["verdict"])
	}
	// A carries a key on every op, B on none; the warm-up was sent too.
	if k, all := keyed.Load(), n.Load(); k == 0 || 2*k < all-10 || 2*k > all+10 {
		t.Errorf("%d of %d requests keyed, want half", k, all)
	}
	for _, f := range []string{"a.hgrm", "b.hgrm"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !strings.Contains(string(b), "Percentile") {
			t.Errorf("%s: %v, want an HdrHistogram percentile file", f, err)
		}
	}
}

// TestBenchOverheadVerdicts: an arm 30ms slower exceeds a 1ms budget with
// confidence (exit 1); an arm whose answers are 500s cannot hold the rate
// (exit 3, the reason printed). Both run on the fake clock (benchInBubble):
// a verdict, not the machine's load, is under test.
func TestBenchOverheadVerdicts(t *testing.T) {
	t.Parallel()
	h, _, _ := abHandler(30 * time.Millisecond)
	const url = "http://bench.test"
	r := benchInBubble(t, h, append([]string{"POST", url + "/a", "--baseline-path", "/b",
		"--max-overhead", "p50=1ms", "--out", "", "--format", "markdown"}, quickAB...)...)
	if r.code != ExitFailed || !strings.Contains(r.out, "**exceeded**") {
		t.Errorf("30ms over a 1ms budget: exit %d, want %d\n%s%s", r.code, ExitFailed, r.out, r.err)
	}
	r = benchInBubble(t, h, append([]string{"POST", url + "/b", "--baseline-path", "/fail", "--out", ""}, quickAB...)...)
	if r.code != ExitInconclusive || !strings.Contains(r.err, "no 2xx") {
		t.Errorf("a failing baseline: exit %d, stderr %q; want %d and the reason", r.code, r.err, ExitInconclusive)
	}
}

// --baseline-no-key against an API that requires the key: arm B gets no
// 2xx, so no Δ is printed (no "+37.12ms (+0%)" against a B p50 of 0) and
// the report says which arm and why.
func TestBenchOverheadArmWithout2xx(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		time.Sleep(5 * time.Millisecond) // the fake clock's: A's latency is exactly 5ms
		w.WriteHeader(http.StatusCreated)
	})
	r := benchInBubble(t, h, append([]string{"POST", "http://bench.test/a", "-d", `{"amount":100}`, "--baseline-no-key", "--out", ""}, quickAB...)...)
	if r.code != ExitInconclusive || !strings.Contains(r.out, "A − B: none, arm B got no 2xx answer") || !strings.Contains(r.out, "status 400") ||
		strings.Contains(r.out, "OVERHEAD") || strings.Contains(r.out, "0.00ms") {
		t.Errorf("B without a 2xx: exit %d, want %d, no Δ and arm B named with its answer\n%s%s", r.code, ExitInconclusive, r.out, r.err)
	}
}

// bench overhead connects as run does: a private CA is refused without
// --ca-cert and trusted with it, --http-debug traces the first exchanges,
// and a client certificate without its key is a usage error.
func TestBenchOverheadTLS(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"bench", "overhead", "POST", srv.URL + "/a", "--baseline-no-key", "--out", ""}, quickAB...)
	if r := runMain(t, nil, args...); r.code == ExitOK || !strings.Contains(r.err, "certificate") {
		t.Errorf("bench overhead against a private CA: exit %d, want an error naming the certificate\n%s", r.code, r.err)
	}
	r := runMain(t, nil, append(args, "--ca-cert", ca, "--http-debug=1")...)
	// Trusted: every arm answered over TLS. The verdict is within, or
	// unclear when the machine's load (other tests) stalled an arm below
	// the rate: a verdict on the rate, not on the trust this test is about.
	within := r.code == ExitOK && strings.Contains(r.out, "verdict: within")
	stalled := r.code == ExitInconclusive && strings.Contains(r.out, "verdict: unclear (arm ") && !strings.Contains(r.out, "no 2xx") && !strings.Contains(r.out, "sent no op")
	if !within && !stalled || strings.Contains(r.err, "certificate") {
		t.Errorf("bench overhead --ca-cert: exit %d, want 0\n%s%s", r.code, r.out, r.err)
	}
	if !strings.Contains(r.err, "> #1 POST") || strings.Contains(r.err, "> #2 ") {
		t.Errorf("bench overhead --http-debug 1: stderr lacks the one exchange traced\n%s", r.err)
	}
	sent := n.Load()
	if r := runMain(t, nil, append(args, "--client-cert", ca)...); r.code != ExitUsage {
		t.Errorf("bench overhead --client-cert without --client-key: exit %d, want %d\n%s", r.code, ExitUsage, r.err)
	}
	if n.Load() != sent {
		t.Errorf("a usage error sent %d requests, want none", n.Load()-sent)
	}
}

func TestBenchStoreUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"--redis", "redis://127.0.0.1:1/0", "--concurrency", "0"},
		{"--redis", "redis://127.0.0.1:1/0", "--format", "xml"},
		{"--redis", "redis://127.0.0.1:1/0", "--ttl", "0s"},
	} {
		if r := runMain(t, nil, append([]string{"bench", "store"}, args...)...); r.code != ExitUsage {
			t.Errorf("bench store %v: exit %d, want %d\n%s", args, r.code, ExitUsage, r.err)
		}
	}
	r := runMain(t, nil, "bench", "store", "--redis", "redis://127.0.0.1:1/0", "--duration", "10ms")
	if r.code != ExitRuntime {
		t.Errorf("bench store on a closed port: exit %d, want %d\n%s", r.code, ExitRuntime, r.err)
	}
}

// storeJSON is what the tests read of bench store's JSON.
type storeJSON struct {
	Redis struct {
		Primitives []struct {
			Name        string  `json:"name"`
			Concurrency int     `json:"concurrency"`
			P50US       float64 `json:"p50_us"`
			P99US       float64 `json:"p99_us"`
			OpsPerS     float64 `json:"ops_per_s"`
		} `json:"primitives"`
		BytesPerRecord int64 `json:"bytes_per_record"`
	} `json:"redis"`
	Capacity struct {
		RPS                  int   `json:"rps"`
		TTLS                 int64 `json:"ttl_s"`
		Records              int64 `json:"records"`
		Bytes                int64 `json:"bytes"`
		RoundtripsPerRequest int   `json:"roundtrips_per_request"`
		StoreOpsPerS         int64 `json:"store_ops_per_s"`
	} `json:"capacity"`
}

func runBenchStore(t *testing.T, url string, args ...string) storeJSON {
	t.Helper()
	r := runMain(t, nil, append([]string{"bench", "store", "--redis", url, "--format", "json"}, args...)...)
	if r.code != ExitOK {
		t.Fatalf("bench store: exit %d\n%s", r.code, r.err)
	}
	var s storeJSON
	dec := json.NewDecoder(strings.NewReader(r.out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("bench store JSON: %v\n%s", err, r.out)
	}
	return s
}

func (s storeJSON) p50(name string) float64 {
	for _, p := range s.Redis.Primitives {
		if p.Name == name && p.Concurrency == 1 {
			return p.P50US
		}
	}
	return 0
}

// storeStep is the length of bench store's steps in the tests: a step
// lets the calls it started finish, so one stalled past its end (the
// script's load, a dial, a loaded machine) is still measured: 50ms,
// 200ms under -race.
var storeStep = map[bool]string{false: "50ms", true: "200ms"}[testenv.Race]

// TestBenchStoreJSON reads the JSON document's shape (see storeStep).
func TestBenchStoreJSON(t *testing.T) {
	t.Parallel()
	url := testsvc.Redis(t)
	s := runBenchStore(t, url, "--concurrency", "1,2", "--duration", storeStep, "--value-size", "512")
	if len(s.Redis.Primitives) != 10 || s.p50("set_nx_px") <= 0 {
		t.Errorf("primitives = %+v, want 5 primitives × 2 concurrencies", s.Redis.Primitives)
	}
	if c := s.Capacity; c.RPS != 10000 || c.TTLS != 86400 || c.Records != 864000000 || c.Bytes != c.Records*s.Redis.BytesPerRecord {
		t.Errorf("capacity = %+v, want the ADR's 10K RPS × 24h and bytes = records × %d", c, s.Redis.BytesPerRecord)
	}
}

func TestTCPFaultsFromFlags(t *testing.T) {
	f, err := tcpFaults(&ProxyTCPOptions{Faults: []string{"delay=0.5,delay=2ms", "reset=0.1"}, Bandwidth: "64KB"})
	want := faults.TCPFaults{Latency: 2 * time.Millisecond, LatencyRate: 0.5, ResetRate: 0.1, Bandwidth: 64000}
	if err != nil || f != want {
		t.Errorf("tcpFaults = %+v, %v; want %+v", f, err, want)
	}
	for _, bad := range []*ProxyTCPOptions{
		{Faults: []string{"drop_ack=0.1"}},
		{Faults: []string{"delay=1,delay=1ms"}, Latency: time.Millisecond},
		{Faults: []string{"reset=2"}},
		{Bandwidth: "fast"},
		{Latency: -time.Millisecond},
	} {
		if _, err := tcpFaults(bad); err == nil {
			t.Errorf("tcpFaults(%+v) = nil error, want one", bad)
		}
	}
	if r := runMain(t, nil, "proxy", "tcp", "--listen", "127.0.0.1:0"); r.code != ExitUsage {
		t.Errorf("proxy tcp without --upstream: exit %d, want %d", r.code, ExitUsage)
	}
}

// TestProxyTCPCommand runs `proxy tcp` with a control API and drives it.
func TestProxyTCPCommand(t *testing.T) {
	t.Parallel()
	url := testsvc.Redis(t)
	listen, api := closedAddr(t), closedAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var errb syncBuffer
	done := make(chan ExitCode, 1)
	go func() {
		done <- Main(ctx, []string{"proxy", "tcp", "--listen", listen, "--upstream", strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0"), "--api", api, "--latency", "1ms"},
			Streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &errb}, func(string) string { return "" })
	}()
	waitFor(t, func() bool {
		c, err := net.Dial("tcp", api)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	s := runBenchStore(t, "redis://"+listen+"/0", "--concurrency", "1", "--duration", storeStep)
	if s.p50("get") < 1000 {
		t.Errorf("a roundtrip through --latency 1ms took %vµs, want at least 1000", s.p50("get"))
	}
	req, _ := http.NewRequest(http.MethodPut, "http://"+api+"/faults", strings.NewReader(`{"down":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /faults: %v %v", resp, err)
	}
	resp.Body.Close()
	if r := runMain(t, nil, "bench", "store", "--redis", "redis://"+listen+"/0", "--duration", "10ms"); r.code != ExitRuntime {
		t.Errorf("bench store through a downed proxy: exit %d, want %d", r.code, ExitRuntime)
	}
	cancel()
	if code := <-done; code != ExitInterrupted {
		t.Errorf("proxy tcp: exit %d after cancel (a signal), want %d", code, ExitInterrupted)
	}
}

// median of xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestBenchStoreSeesProxyLatency validates the measurement: through the
// TCP proxy at --latency 1ms, bench store's roundtrip p50 is 0.9–1.3 ms
// above the direct one (medians of alternating short runs, for a loaded
// machine).
func TestBenchStoreSeesProxyLatency(t *testing.T) {
	testenv.Timing(t)
	testenv.SkipUnlessLong(t)
	url := testsvc.Redis(t)
	_, addr := startTCPProxy(t, strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0"), faults.TCPFaults{Latency: time.Millisecond})
	var diffs []float64
	for range 5 {
		direct := runBenchStore(t, url, "--concurrency", "1", "--duration", "300ms")
		proxied := runBenchStore(t, "redis://"+addr+"/0", "--concurrency", "1", "--duration", "300ms")
		for _, prim := range []string{"set_nx_px", "get"} {
			diffs = append(diffs, (proxied.p50(prim)-direct.p50(prim))/1000)
		}
	}
	if d := median(diffs); d < 0.9 || d > 1.3 {
		t.Errorf("roundtrip through --latency 1ms: median %.3f ms above direct (runs %v), want 0.9–1.3", d, diffs)
	} else {
		t.Logf("roundtrip through --latency 1ms: median +%.3f ms (runs %v)", d, diffs)
	}
}

// startTCPProxy serves a TCP fault proxy to upstream until the test ends.
func startTCPProxy(t *testing.T, upstream string, f faults.TCPFaults) (*faults.TCPProxy, string) {
	t.Helper()
	p, err := faults.NewTCPProxy(upstream, f, 1)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return p, ln.Addr().String()
}

// TestBenchOverheadSeesRoundtrips validates the A/B end to end: the lab on
// a Redis store behind the TCP proxy, protected charges (A) against naive
// ones (B). With 1ms added per Redis roundtrip, Δp50 grows by about the
// protected path's roundtrips (counted by the proxy) × 1ms.
func TestBenchOverheadSeesRoundtrips(t *testing.T) {
	testenv.Timing(t)
	testenv.SkipUnlessLong(t)
	url := testsvc.Redis(t)
	p, addr := startTCPProxy(t, strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0"), faults.TCPFaults{})
	rl, err := startLab(context.Background(), &LabOptions{Store: "redis://" + addr + "/0", Ledger: "memory", ProcessorLatency: 0}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Stop()
	ab := func() (p50 float64, aOps int) {
		t.Helper()
		r := runMain(t, nil, "bench", "overhead", "POST", rl.URL+"/charges",
			"-d", `{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}`, "-H", "Authorization: Bearer alice",
			"--baseline-path", "/naive/charges", "--rate", "100", "--duration", "1500ms", "--warmup", "300ms",
			"--block", "250ms", "--format", "json", "--out", "", "--resamples", "200")
		if r.code != ExitOK {
			t.Fatalf("bench overhead: exit %d\n%s%s", r.code, r.out, r.err)
		}
		var doc struct {
			Arms struct {
				A struct {
					Ops int `json:"ops"`
				} `json:"a"`
			} `json:"arms"`
			Delta struct {
				P50 struct {
					MS float64 `json:"ms"`
				} `json:"p50"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Delta.P50.MS, doc.Arms.A.Ops
	}
	var growth, trips []float64
	for range 3 {
		if err := p.SetFaults(faults.TCPFaults{}); err != nil {
			t.Fatal(err)
		}
		base, _ := ab()
		if err := p.SetFaults(faults.TCPFaults{Latency: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		before := p.Stats().Exchanges
		slow, _ := ab()
		// every Redis exchange in the slow run is the protected arm's
		// (the naive endpoint never touches the store); the warm-up and
		// the measured blocks all count, as do their ops
		exchanges := float64(p.Stats().Exchanges - before)
		ops := float64(abtest.Ops(abtest.Options{Rate: 100, Duration: 1500 * time.Millisecond, Warmup: 300 * time.Millisecond, Block: 250 * time.Millisecond})) / 2
		growth = append(growth, slow-base)
		trips = append(trips, exchanges/ops)
	}
	g, n := median(growth), median(trips)
	t.Logf("Δp50 grew by %v ms (median %.2f) at %v roundtrips per protected charge (median %.2f)", growth, g, trips, n)
	if n < 1 {
		t.Fatalf("%.2f Redis roundtrips per protected charge, want at least 1", n)
	}
	if g < 0.7*n || g > 1.4*n+0.3 {
		t.Errorf("Δp50 grew by %.2f ms with 1ms per roundtrip and %.2f roundtrips per request, want about %.2f", g, n, n)
	}
}
