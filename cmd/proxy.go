package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
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
duplicate=0.05,copies=3; delay=0.2,delay=20ms.`,
		Example: `  idemcheck proxy --target http://127.0.0.1:8080 --listen 127.0.0.1:9090 \
      --fault drop_ack=0.1 --fault timeout=0.05,after=50ms --fault duplicate=0.05,copies=3
  # then point your client at http://127.0.0.1:9090`,
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
	fl.StringVarP(&opts.Target, "target", "t", "", "base URL of the API to forward to")
	fl.StringArrayVar(&opts.Faults, "fault", nil, "a fault to inject, KIND=RATE[,PARAM=VALUE...] (repeatable): "+strings.Join(faults.Kinds(), ", "))
	fl.Uint64Var(&opts.Seed, "seed", 1, "seed for fault placement")
	return c
}

// parseFault reads KIND=RATE[,PARAM=VALUE...]. RATE is the fault's rate
// parameter; the PARAMs are the kind-specific parameters faults declares
// (faults.Params). The common attempts parameter is not one: the proxy
// sees every request as a first attempt.
func parseFault(s string) (faults.Spec, error) {
	parts := strings.Split(s, ",")
	kind, rate, ok := strings.Cut(parts[0], "=")
	if !ok {
		return faults.Spec{}, fmt.Errorf("--fault %q: want KIND=RATE, like drop_ack=0.1", s)
	}
	spec := faults.Spec{Kind: kind}
	rateParam, _ := faults.LookupParam("rate")
	if err := rateParam.Set(&spec, rate); err != nil {
		return faults.Spec{}, fmt.Errorf("--fault %q: %w", s, err)
	}
	var names []string
	byName := map[string]faults.Param{}
	for _, p := range faults.Params() {
		if p.Kind != "" {
			names = append(names, p.Name)
			byName[p.Name] = p
		}
	}
	for _, part := range parts[1:] {
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return faults.Spec{}, fmt.Errorf("--fault %q: parameter %q: want NAME=VALUE", s, part)
		}
		p, ok := byName[name]
		if !ok {
			want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
			return faults.Spec{}, fmt.Errorf("--fault %q: unknown parameter %q: want %s", s, name, want)
		}
		if err := p.Set(&spec, val); err != nil {
			return faults.Spec{}, fmt.Errorf("--fault %q: %w", s, err)
		}
	}
	return spec, nil
}

func proxyRun(ctx context.Context, opts *ProxyOptions) error {
	target, err := url.Parse(opts.Target)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		// the URL as given may hold a password or a token: never echo it
		return withHint(ExitUsage, fmt.Errorf("--target %q is not an http(s) URL", redaction.String(opts.Target)), "e.g. --target http://127.0.0.1:8080")
	}
	var specs []faults.Spec
	for _, f := range opts.Faults {
		spec, err := parseFault(f)
		if err != nil {
			return withCode(ExitUsage, err)
		}
		if _, err := faults.New(spec); err != nil {
			return withHint(ExitUsage, fmt.Errorf("--fault %q: %s", f, strings.ReplaceAll(err.Error(), "\n", "; ")),
				"KIND=RATE with RATE in [0, 1], e.g. drop_ack=0.1 or timeout=0.05,after=50ms")
		}
		specs = append(specs, spec)
	}
	plan, err := faults.NewPlan(opts.Seed, specs)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return withHint(ExitRuntime, fmt.Errorf("proxy: %w", err), "choose another --listen address")
	}
	p := faults.NewProxy(target, plan)
	hs := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	fmt.Fprintf(opts.Streams.Err, "proxy on http://%s → %s (faults: %s; seed %d); Ctrl-C to stop\n", ln.Addr(), redaction.URL(target), faultList(opts.Faults), opts.Seed)
	select {
	case <-ctx.Done():
	case err := <-done:
		return withCode(ExitRuntime, fmt.Errorf("proxy: %w", err))
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	fmt.Fprintf(opts.Streams.Err, "proxy stopped after %d requests\n", p.Requests())
	return nil
}

func faultList(fs []string) string {
	if len(fs) == 0 {
		return "none"
	}
	return strings.Join(fs, " ")
}
