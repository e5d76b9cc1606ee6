package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/lab"
)

// LabOptions are the inputs of `idemcheck lab`.
type LabOptions struct {
	Streams Streams

	Addr             string
	Store            string // "memory" or redis://...
	Ledger           string // "memory" or postgres://...
	ProcessorLatency time.Duration
	KeyTTL           time.Duration
	Bugs             []string
	AllowReset       bool
	// Namespace isolates the lab's data on shared servers: a Postgres
	// schema and a Redis key prefix of that name.
	Namespace string
	Consumer  string // --consumer: the broker the lab's queue consumers read
	// Instances is how many labs startLab serves, each on its own port,
	// as instances of one service behind a load balancer: they share the
	// store, the ledger (so the namespace) and the card processor, and
	// nothing else (the in-process-lock bug shows only then). 0 means 1.
	Instances int
	// RetentionKeys is how many keys the retention-by-count bug keeps:
	// 0 means lab.RetentionKeys. No flag sets it; tests lower it.
	RetentionKeys int
}

// NewCmdLab builds `idemcheck lab`.
func NewCmdLab(f *Factory, runF func(context.Context, *LabOptions) error) *cobra.Command {
	opts := &LabOptions{Streams: f.Streams}
	c := &cobra.Command{
		Use:   "lab",
		Short: "Start the lab: the reference payment service with naive, protected and buggy endpoints",
		Long: `The lab is idemcheck's built-in reference target: a payment API with an
idempotency store, a ledger and a card processor (a stub PSP that, like
Stripe, deduplicates by the key it is given and counts every real charge).

  client -> payment API -> idempotency store -> ledger -> card processor
                           (memory | Redis)     (memory | Postgres)

Endpoints: POST /charges (protected) and /naive/charges; PUT/GET
/accounts/{id}, POST /accounts/{id}/debit (compare-and-set) and
/naive/accounts/{id}/debit; POST /posts/{id}/like (deduplicated by op_id) and
/naive/posts/{id}/like; POST /webhooks (Standard Webhooks deliveries of payment
events, verified, then applied once per webhook-id; and of customer.updated
events, the newest created winning whatever the order) and /naive/webhooks
(verified, then applied every time, the last delivery winning), signed with
the lab's published test secret whsec_aWRlbWNoZWNrLWxhYi13ZWJob29rLXNpZ25pbmc=;
read-backs for the oracles (GET /charges?idempotency_key=K, /charges/counts,
/processor/charges/counts, /accounts/{id}/debits, /posts/{id},
/customers/{id}); GET /openapi.json, the OpenAPI 3.1 document of the charges and
likes (idemcheck audit --openapi audits them in one command); GET /healthz;
POST /reset with --allow-reset.

Seeded bugs (--bug NAME, repeatable) break the protected endpoints the
classic ways, so you can watch idemcheck catch each one:
` + lab.BugTable(),
		Example: `  idemcheck lab --listen 127.0.0.1:8080
  idemcheck lab --store redis://127.0.0.1:6379/0 --ledger postgres://postgres@127.0.0.1:5432/postgres
  idemcheck lab --bug check-then-act --bug key-only --processor-latency 50ms`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return labRun(c.Context(), opts)
		},
	}
	addLabFlags(c, opts)
	c.Flags().StringVar(&opts.Addr, "listen", "127.0.0.1:8080", "address to listen on")
	aliasFlag(c.Flags(), "addr", "listen")
	c.Flags().BoolVar(&opts.AllowReset, "allow-reset", false, "enable POST /reset, which clears every store")
	return c
}

func addLabFlags(c *cobra.Command, opts *LabOptions) {
	fl := c.Flags()
	fl.StringVar(&opts.Store, "store", "memory", "idempotency store: memory, or a Redis URL (redis://127.0.0.1:6379/0)")
	fl.StringVar(&opts.Ledger, "ledger", "memory", fmt.Sprintf("ledger: memory, or a Postgres URL (postgres://user@127.0.0.1:5432/db; pool_max_conns=N sets the pool, default %d)", lab.DefaultPostgresMaxConns))
	fl.DurationVar(&opts.ProcessorLatency, "processor-latency", 20*time.Millisecond, "how long the card processor takes per charge (0 for none)")
	fl.DurationVar(&opts.KeyTTL, "key-ttl", 24*time.Hour, "how long idempotency keys are kept")
	fl.StringVar(&opts.Namespace, "namespace", "", "keep this lab's data apart on shared Redis/Postgres servers (a Postgres schema and a Redis key prefix of this name)")
	fl.StringVar(&opts.Consumer, "consumer", "", "run the queue consumers on this broker: redis://127.0.0.1:6379/0 (streams lab:charges, protected, and lab:charges:naive), nats://127.0.0.1:4222 (JetStream subjects lab.charges and lab.charges.naive), amqp://guest:guest@127.0.0.1:5672/ (RabbitMQ queues lab.charges and lab.charges.naive) or kafka://127.0.0.1:9092 (topics lab.charges and lab.charges.naive, group lab), for the stream-charges, nats-charges, amqp-charges and kafka-charges built-ins")
	fl.StringArrayVar(&opts.Bugs, "bug", nil, "seed a classic bug into the protected endpoints (repeatable): "+strings.Join(lab.BugNames(), ", "))
}

// maxLabLatency bounds --processor-latency: longer, every request of a
// run would time out.
const maxLabLatency = time.Minute

// check refuses lab flags out of their range, before anything starts.
func (opts *LabOptions) check() error {
	if opts.ProcessorLatency < 0 || opts.ProcessorLatency > maxLabLatency {
		return withHint(ExitUsage, fmt.Errorf("--processor-latency %v: want 0 to %v", opts.ProcessorLatency, maxLabLatency), "e.g. --processor-latency 50ms; 0 for none")
	}
	if opts.KeyTTL < time.Second {
		return withHint(ExitUsage, fmt.Errorf("--key-ttl %v: want at least 1s", opts.KeyTTL), "how long keys are kept, e.g. --key-ttl 24h (the default)")
	}
	return nil
}

// startLab starts the lab of opts on addr (lab.Start), its errors given
// their exit codes and hints.
func startLab(ctx context.Context, opts *LabOptions, addr string) (*lab.Running, error) {
	cfg := lab.Config{ProcessorLatency: opts.ProcessorLatency, KeyTTL: opts.KeyTTL, Bugs: opts.Bugs, AllowReset: opts.AllowReset, RetentionKeys: opts.RetentionKeys}
	if cfg.ProcessorLatency == 0 {
		cfg.ProcessorLatency = lab.NoProcessorLatency // the flag's 0 means none; lab.Config's 0 means its default
	}
	r, err := lab.Start(ctx, cfg, lab.Backends{Store: opts.Store, Ledger: opts.Ledger, Namespace: opts.Namespace, Consumer: opts.Consumer}, opts.Instances, addr)
	if err != nil {
		return nil, labError(err)
	}
	return r, nil
}

func labRun(ctx context.Context, opts *LabOptions) error {
	rl, err := startLab(ctx, opts, opts.Addr)
	if err != nil {
		return err
	}
	defer rl.Stop()
	bugs := "none"
	if len(opts.Bugs) > 0 {
		bugs = strings.Join(opts.Bugs, ", ")
	}
	fmt.Fprintf(opts.Streams.Err, "lab listening on %s (store %s, ledger %s, bugs %s); Ctrl-C to stop\n", rl.URL, redact(opts.Store), redact(opts.Ledger), bugs)
	<-ctx.Done()
	fmt.Fprintln(opts.Streams.Err, "lab stopped")
	return nil
}

// redact is a store or ledger URL (or key=value DSN) as a terminal or a
// log may show it: password and every value but the connection
// parameters masked, an unparseable URL masked whole.
func redact(raw string) string {
	return redaction.Options{Keep: redaction.ConnParams}.String(raw)
}

// labError gives an error of lab.Start its exit code (its hint comes
// with it): a bad --store, --ledger or --namespace (or --bug) is a usage
// error, a backend that cannot be reached or an address taken a runtime
// one.
func labError(err error) error {
	var ce *lab.ConfigError
	switch {
	case errors.As(err, &ce):
		return withCode(ExitUsage, &configError{ce})
	case errors.Is(err, lab.ErrUnknownBug):
		return withCode(ExitUsage, err)
	}
	return withCode(ExitRuntime, err)
}

// configError is a lab.ConfigError named by its flag: --store VALUE: ….
type configError struct{ *lab.ConfigError }

func (e *configError) Error() string { return "--" + e.ConfigError.Error() }
