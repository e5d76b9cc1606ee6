package trial

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/pause"
	"github.com/idemcheck/idemcheck/queues"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// publisher is a queue target's Sender (operation.publish): it publishes
// the attempts, says whether its broker answers, and whether the consumer
// behind it has drained what was published.
type publisher interface {
	runner.Sender
	Ping(ctx context.Context) error
	Drained(ctx context.Context) (ok bool, why string, err error)
	// Redelivered are the messages now pending that the broker handed
	// out more than once.
	Redelivered(ctx context.Context) ([]string, error)
	// Mark notes where this run's messages start, for Drained and
	// Redelivered; it is called once, before the load.
	Mark(ctx context.Context)
	// Delivered reports whether every message was handed to the
	// consumer at least once.
	Delivered(ctx context.Context) (bool, error)
	Close() error
}

// newPublisher is the publisher of sc to broker, by the broker's scheme.
func newPublisher(sc *scenarios.Scenario, broker *url.URL, env func(string) string) (publisher, error) {
	switch broker.Scheme {
	case "redis", "rediss":
		if sc.Operation.Publish.Stream == "" {
			return nil, fmt.Errorf("target %s:// is a Redis broker: operation.publish names a stream there, not a subject", broker.Scheme)
		}
		return queues.NewRedisStream(sc, broker, env)
	case "nats", "tls":
		if sc.Operation.Publish.Subject == "" {
			return nil, fmt.Errorf("target %s:// is a NATS server: operation.publish names a subject there, not a stream", broker.Scheme)
		}
		return queues.NewNATS(sc, broker, env)
	case "amqp", "amqps":
		if sc.Operation.Publish.Queue == "" {
			return nil, fmt.Errorf("target %s:// is a RabbitMQ broker: operation.publish names a queue there", broker.Scheme)
		}
		return queues.NewAMQP(sc, broker, env)
	case "kafka":
		if sc.Operation.Publish.Topic == "" {
			return nil, fmt.Errorf("target %s:// is a Kafka cluster: operation.publish names a topic there", broker.Scheme)
		}
		return queues.NewKafka(sc, broker, env)
	}
	return nil, fmt.Errorf("no publisher for %s:// brokers", broker.Scheme)
}

// queueTargets are the HTTP base URLs of a queue scenario's service
// (Options.Service, else its service:), which its HTTP oracles read;
// none when its oracles read a database alone.
func queueTargets(sc *scenarios.Scenario, o Options) ([]*url.URL, error) {
	services, err := sc.ServiceURLs(o.Service)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, sc.Name, err)
	}
	for _, u := range services {
		o.Secrets.AddURL(u)
	}
	if len(services) == 0 && sc.ReadsHTTP() {
		return nil, fmt.Errorf("%w: %s: its oracles read the service behind the queue over HTTP, and none is given: set service: http://HOST:PORT in the scenario, or --service", ErrConfig, sc.Name)
	}
	return services, nil
}

// brokerError is a queue's broker that does not answer: its error says
// what to check (not an HTTP target's TargetError).
type brokerError struct{ err error }

func (e *brokerError) Error() string { return e.err.Error() }
func (e *brokerError) Unwrap() error { return e.err }

// drainPoll is how often drain asks the broker.
const drainPoll = 50 * time.Millisecond

// drain waits, up to quiet (at least a poll), until the consumer behind
// the queue has drained what was published: nothing ready, nothing
// delivered and unacknowledged. It returns "" once drained, else why not:
// what is left, or that the broker could not tell. An interrupted wait
// says so.
func (t *Trial) drain(ctx context.Context, quiet time.Duration) string {
	deadline := time.Now().Add(max(quiet, drainPoll))
	why := ""
	for {
		ok, w, err := t.queue.Drained(context.WithoutCancel(ctx))
		switch {
		case err != nil:
			why = err.Error()
		case ok:
			return ""
		default:
			why = w
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("the consumer had not drained the queue within quiet (%s): %s; raise quiet, or check the consumer", quiet, why)
		}
		if !pause.For(ctx, drainPoll) {
			return "interrupted while waiting for the consumer to drain the queue: " + why
		}
	}
}

// Close releases what the trial holds open: a queue's connections.
func (t *Trial) Close() {
	t.cut.close()
	t.cut = nil
	if t.queue != nil {
		t.queue.Close()
	}
}

// brokerAddr is broker's host:port, its scheme's default port when it
// names none.
func brokerAddr(broker *url.URL) string {
	if broker.Port() != "" {
		return broker.Host
	}
	port := "6379"
	switch broker.Scheme {
	case "nats", "tls":
		port = "4222"
	case "amqp":
		port = "5672"
	case "amqps":
		port = "5671"
	case "kafka":
		port = "9092"
	}
	return net.JoinHostPort(broker.Hostname(), port)
}

// PoisonBody is the body of the consumer battery's poison message: JSON
// cut short, which no consumer can decode.
const PoisonBody = `{"poison": "a message no consumer can decode`

// poisonError is a poison message the broker did not confirm.
type poisonError struct{ why string }

func (e *poisonError) Error() string { return "the poison message was not confirmed: " + e.why }

// poison publishes one message with PoisonBody under a fresh id, before
// the load, and waits for the broker's confirm.
func (t *Trial) poison(ctx context.Context) error {
	sc := *t.sc
	sc.Operation.Body = PoisonBody
	p, err := newPublisher(&sc, t.target, t.opts.Getenv)
	if err != nil {
		return err
	}
	defer p.Close()
	a := &history.Attempt{}
	start := time.Now()
	if err := p.Send(ctx, scenarios.Vars{Key: "poison-" + uuid.NewString()}, nil, a, func() time.Duration { return time.Since(start) }); err != nil {
		return &poisonError{err.Error()}
	}
	if a.Outcome != history.OK {
		return &poisonError{fmt.Sprintf("%s %s", a.Outcome, a.Err)}
	}
	if q, ok := t.queue.(interface{ Published(n int) }); ok {
		q.Published(1) // a drain that counts what this run published counts it too
	}
	return nil
}
