package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/faults"
	redaction "github.com/idemcheck/idemcheck/internal/redact" // cmd has its own redact until lab.go uses this one
)

// ProxyOptions are the inputs of `idemcheck proxy`.
type ProxyOptions struct {
	Streams Streams
	Listen  string
	Target  string
	Faults  []string
	Seed    uint64
	// API is the control API's address, Log the request log's path ("-"
	// for stdout); "" for none.
	API, Log   string
	KeyHeader  string
	RedactPath bool
}

// NewCmdProxy builds `idemcheck proxy`.
func NewCmdProxy(f *Factory, runF func(context.Context, *ProxyOptions) error) *cobra.Command {
	opts := &ProxyOptions{Streams: f.Streams}
	c := &cobra.Command{
		Use:   "proxy",
		Short: "Put a fault-injecting reverse proxy in front of an API, for clients that are not idemcheck",
		Long: `Proxy forwards every request to --target and injects the same faults as
'idemcheck run', so your own client, SDK or end-to-end suite meets lost
acknowledgements, timeouts, duplicate sends and resets. The n-th request is
op n; faults are placed from --seed, so a run is reproducible.

What the client sees, by fault:
  drop_ack   the API answers in full, then the client's connection is closed
  timeout    the API's answer is abandoned after 'after'; the client gets 504
  duplicate  the API gets 'copies' identical requests, the client one answer
  reset      the API never sees the request; the connection is closed
  delay      the request is forwarded after 'delay'

A fault is KIND=RATE, with parameters after commas: timeout=0.1,after=50ms;
duplicate=0.05,copies=3; delay=0.2,delay=20ms.

--log FILE writes a JSON line per request as it ends: time, op, method,
path (query values masked), key (--key-header), fault, the status the
client got (0 and outcome "closed" when its connection was closed before
an answer; outcome "cut" when it was closed mid-answer), ms.

--api ADDR serves a control API, so a test can change the faults mid-run:
  GET  /faults   the faults in force: {"faults":["drop_ack=0.1"],"seed":1}
  PUT  /faults   replace them (the same JSON; {"faults":[]} for none)
  GET  /stats    requests, faults injected, answers by status, keys seen
                 and requests that repeated a key (the clients' retries)`,
		Example: `  idemcheck proxy --target http://127.0.0.1:8080 --listen 127.0.0.1:9090 \
      --fault drop_ack=0.1 --fault timeout=0.05,after=50ms --fault duplicate=0.05,copies=3
  # then point your client at http://127.0.0.1:9090

  # log every request, and turn the faults off mid-run
  idemcheck proxy --target http://127.0.0.1:8080 --fault drop_ack=0.2 --log requests.jsonl --api 127.0.0.1:9091 &
  curl -X PUT -d '{"faults":[]}' http://127.0.0.1:9091/faults
  curl http://127.0.0.1:9091/stats`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Target == "" {
				return withHint(ExitUsage, errors.New("proxy needs --target"), "the API to forward to, e.g. --target http://127.0.0.1:8080")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return proxyRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Listen, "listen", "127.0.0.1:9090", "address to listen on")
	aliasFlag(fl, "addr", "listen")
	fl.StringVarP(&opts.Target, "target", "t", "", "base URL of the API to forward to")
	fl.StringArrayVar(&opts.Faults, "fault", nil, "a fault to inject, KIND=RATE[,PARAM=VALUE...] (repeatable): "+strings.Join(faults.Kinds(), ", "))
	fl.Uint64Var(&opts.Seed, "seed", 1, "seed for fault placement")
	fl.StringVar(&opts.API, "api", "", "address of the control API (GET/PUT /faults, GET /stats; no authentication: keep it on loopback); empty for none")
	fl.StringVar(&opts.Log, "log", "", "write a JSON line per request to this file (appended; - for stdout); empty for none")
	fl.StringVar(&opts.KeyHeader, "key-header", "Idempotency-Key", "the request header the log and the stats read the idempotency key from")
	fl.BoolVar(&opts.RedactPath, "redact-path", false, "mask every path segment in the request log, for paths that carry a credential")
	c.AddCommand(NewCmdProxyTCP(f, nil))
	return c
}

func proxyRun(ctx context.Context, opts *ProxyOptions) error {
	target, err := url.Parse(opts.Target)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		// the URL as given may hold a password or a token: never echo it
		return withHint(ExitUsage, fmt.Errorf("--target %q is not an http(s) URL", redaction.String(opts.Target)), "e.g. --target http://127.0.0.1:8080")
	}
	p := faults.NewProxy(target, nil)
	if err := p.SetFaults(faults.ProxyFaults{Faults: opts.Faults, Seed: opts.Seed}); err != nil {
		return withCode(ExitUsage, err)
	}
	p.Log, p.KeyHeader, p.RedactPath = opts.Streams.Err, opts.KeyHeader, opts.RedactPath
	if s := opts.Streams.Secrets; s != nil {
		s.AddURL(target)
		p.Scrub = s.Scrub
	}
	if opts.Log == "-" {
		p.RequestLog = opts.Streams.Out
	} else if opts.Log != "" {
		f, err := os.OpenFile(opts.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return withHint(ExitRuntime, fmt.Errorf("proxy: request log: %w", err), "give --log a file in a directory that exists and can be written")
		}
		defer f.Close()
		p.RequestLog = f
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return withHint(ExitRuntime, fmt.Errorf("proxy: %w", err), "choose another --listen address")
	}
	banner := fmt.Sprintf("proxy on http://%s → %s (faults: %s; seed %d); Ctrl-C to stop", ln.Addr(), redaction.URL(target), faultList(opts.Faults), opts.Seed)
	if err := serveProxy(ctx, "proxy", ln, p.Serve, opts.API, faults.ProxyAPI(p), banner, opts.Streams.Err); err != nil {
		return err
	}
	fmt.Fprintf(opts.Streams.Err, "proxy stopped: %s\n", p.Stats().StatsLine())
	return interrupted(ctx)
}

// serveProxy serves a proxy on ln until ctx ends (serve) and, when
// apiAddr is set, its control API (api) beside it, saying where on errw
// (banner first). Either failing stops both: an error with its exit code.
func serveProxy(ctx context.Context, name string, ln net.Listener, serve func(context.Context, net.Listener) error, apiAddr string, api http.Handler, banner string, errw io.Writer) error {
	var aln net.Listener
	if apiAddr != "" {
		var err error
		if aln, err = net.Listen("tcp", apiAddr); err != nil {
			ln.Close()
			return withHint(ExitRuntime, fmt.Errorf("%s: control API: %w", name, err), "choose another --api address")
		}
		fmt.Fprintf(errw, "control API on http://%s/faults\n", aln.Addr())
	}
	fmt.Fprintln(errw, banner)
	switch fromAPI, err := faults.ServeWithAPI(ctx, ln, serve, aln, api); {
	case err != nil && fromAPI:
		return withCode(ExitRuntime, fmt.Errorf("%s: control API: %w", name, err))
	case err != nil:
		return withCode(ExitRuntime, fmt.Errorf("%s: %w", name, err))
	}
	return nil
}

// interrupted is the exit of a proxy that served until it was stopped: 130
// when a signal stopped it, as every command interrupted.
func interrupted(ctx context.Context) error {
	if ctx.Err() != nil {
		return silentExit{ExitInterrupted}
	}
	return nil
}

func faultList(fs []string) string {
	if len(fs) == 0 {
		return "none"
	}
	return strings.Join(fs, " ")
}

// ProxyTCPOptions are the inputs of `idemcheck proxy tcp`.
type ProxyTCPOptions struct {
	Streams    Streams
	Listen     string
	Upstream   string
	API        string
	Latency    time.Duration
	Jitter     time.Duration
	Down       bool
	ResetAfter int64
	CutRate    float64 // --cut-rate: faults.TCPFaults.CutRate
	Bandwidth  string
	Faults     []string
	Seed       uint64
}

// NewCmdProxyTCP builds `idemcheck proxy tcp`.
func NewCmdProxyTCP(f *Factory, runF func(context.Context, *ProxyTCPOptions) error) *cobra.Command {
	opts := &ProxyTCPOptions{Streams: f.Streams}
	c := &cobra.Command{
		Use:   "tcp",
		Short: "Put a fault-injecting TCP proxy in front of a dependency (Redis, Postgres)",
		Long: `Proxy tcp forwards TCP connections from --listen to --upstream and injects
faults into an API's dependency: to measure what a Redis
roundtrip costs (--latency), or to check that the API fails closed when its
store is cut (--down), never charging twice.

  --latency D      data from the upstream is held D before it reaches the
                   client, so one request/answer exchange grows by D (not 2D)
  --jitter J       each hold varies uniformly within ±J
  --down           every connection is reset, new ones at once
  --reset-after N  a connection is reset after N bytes (both ways)
  --bandwidth B    upstream→client bytes per second per connection (1MB, 64KB)

--fault takes the HTTP proxy's syntax for the faults both proxies share:
delay=RATE,delay=D holds a share RATE of exchanges D (delay=1,delay=1ms is
--latency 1ms); reset=RATE resets a share RATE of new connections at their
first answer. Draws come from --seed.

--api ADDR serves a control API, so a test can cut the dependency mid-run
and restore it:
  GET  /faults   the faults in force, as JSON
  PUT  /faults   replace them: {"latency":"1ms","jitter":"0s","down":false,
                 "reset_after":0,"reset_rate":0,"latency_rate":0,"bandwidth":0}
  GET  /stats    connections, exchanges, bytes, resets`,
		Example: `  # Redis 1ms further away, for bench store and bench overhead
  idemcheck proxy tcp --listen 127.0.0.1:6380 --upstream 127.0.0.1:6379 --latency 1ms
  idemcheck bench store --redis redis://127.0.0.1:6380/0

  # cut Redis mid-run and restore it
  idemcheck proxy tcp --listen 127.0.0.1:6380 --upstream 127.0.0.1:6379 --api 127.0.0.1:6381 &
  curl -X PUT -d '{"down":true}' http://127.0.0.1:6381/faults
  curl -X PUT -d '{}' http://127.0.0.1:6381/faults`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Upstream == "" {
				return withHint(ExitUsage, errors.New("proxy tcp needs --upstream"), "the dependency's address, e.g. --upstream 127.0.0.1:6379")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return proxyTCPRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Listen, "listen", "127.0.0.1:6380", "address to listen on")
	aliasFlag(fl, "addr", "listen")
	fl.StringVar(&opts.Upstream, "upstream", "", "address to forward to, host:port")
	fl.StringVar(&opts.API, "api", "", "address of the control API (GET/PUT /faults, GET /stats); empty for none")
	fl.DurationVar(&opts.Latency, "latency", 0, "hold each answer from the upstream this long")
	fl.DurationVar(&opts.Jitter, "jitter", 0, "vary each hold uniformly within ±this")
	fl.BoolVar(&opts.Down, "down", false, "reset every connection: the dependency is down")
	fl.Int64Var(&opts.ResetAfter, "reset-after", 0, "reset a connection after this many bytes (0: never)")
	fl.Float64Var(&opts.CutRate, "cut-rate", 0, "cut a connection instead of passing on this share of its chunks, either way: a queue consumer cut off between a delivery and its ack (0.05)")
	fl.StringVar(&opts.Bandwidth, "bandwidth", "", "upstream→client bytes per second per connection: 1MB, 64KB, 10000 (empty: no cap)")
	fl.StringArrayVar(&opts.Faults, "fault", nil, "a shared fault in the HTTP proxy's syntax: delay=RATE,delay=D or reset=RATE (repeatable)")
	fl.Uint64Var(&opts.Seed, "seed", 1, "seed for jitter and fault rates")
	return c
}

// tcpFaults builds the TCP proxy's faults from the flags
// (faults.ParseTCPFlags).
func tcpFaults(opts *ProxyTCPOptions) (faults.TCPFaults, error) {
	f := faults.TCPFaults{Latency: opts.Latency, Jitter: opts.Jitter, Down: opts.Down, ResetAfter: opts.ResetAfter, CutRate: opts.CutRate}
	f, err := faults.ParseTCPFlags(f, opts.Bandwidth, opts.Faults)
	return f, withCode(ExitUsage, err)
}

func proxyTCPRun(ctx context.Context, opts *ProxyTCPOptions) error {
	f, err := tcpFaults(opts)
	if err != nil {
		return err
	}
	p, err := faults.NewTCPProxy(opts.Upstream, f, opts.Seed)
	if err != nil {
		return withHint(ExitUsage, err, "e.g. --upstream 127.0.0.1:6379")
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return withHint(ExitRuntime, fmt.Errorf("proxy tcp: %w", err), "choose another --listen address")
	}
	banner := fmt.Sprintf("tcp proxy on %s → %s (latency %v, jitter %v, down %v, reset after %d B, bandwidth %d B/s; seed %d); Ctrl-C to stop",
		ln.Addr(), opts.Upstream, f.Latency, f.Jitter, f.Down, f.ResetAfter, f.Bandwidth, opts.Seed)
	if err := serveProxy(ctx, "proxy tcp", ln, p.Serve, opts.API, faults.TCPAPI(p), banner, opts.Streams.Err); err != nil {
		return err
	}
	st := p.Stats()
	fmt.Fprintf(opts.Streams.Err, "tcp proxy stopped after %d connections, %d exchanges\n", st.Conns, st.Exchanges)
	return interrupted(ctx)
}
