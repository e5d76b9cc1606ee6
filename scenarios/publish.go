package scenarios

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/redact"
)

// Publish is operation.publish: each op is a message published to a
// queue, the target's broker. Its id is the op's key, the same on every
// republish (a producer's retry, a duplicate send); its body is
// operation.body. The consumer behind the broker applies it; the oracles
// read what it applied through the service (Scenario.Service) or a
// database.
//
// The broker is the target's scheme: redis:// or rediss:// publishes to a
// Redis stream (XADD, Stream), nats:// to a NATS JetStream subject
// (Subject), amqp:// or amqps:// to a RabbitMQ queue (Queue), through
// an exchange when Exchange is set, kafka:// to a Kafka topic (Topic),
// the message id the record's key, read by a consumer group (Group).
type Publish struct {
	// Stream is the Redis stream the message is added to.
	Stream string `yaml:"stream"`
	// Subject is the NATS subject the message is published to; a
	// JetStream stream must take it.
	Subject string `yaml:"subject"`
	// Queue is the RabbitMQ queue the consumer reads: the message is
	// published to it through the default exchange, or through Exchange
	// with RoutingKey when they are set. Whether it drained, and what it
	// redelivered, are read from RabbitMQ's management API (Management).
	Queue string `yaml:"queue"`
	// Topic is the Kafka topic the record is produced to, its key the
	// message id (every copy of a message lands on one partition).
	Topic string `yaml:"topic"`
	// Group is the Kafka consumer group that consumes Topic: the topic
	// has drained when the group's committed offsets reach its end.
	Group string `yaml:"group"`
	// Exchange and RoutingKey are where a RabbitMQ message is published
	// when not straight to Queue.
	Exchange   string `yaml:"exchange"`
	RoutingKey string `yaml:"routing_key"`
	// Management is the base URL of RabbitMQ's management API; default
	// http://<the broker's host>:15672 with the broker URL's user and
	// password.
	Management string `yaml:"management"`
	// IDHeader is the NATS header that carries the message id; default
	// "Message-Id". Nats-Msg-Id makes JetStream drop a republish within
	// its duplicate window: the broker's layer then deduplicates the
	// publishes, and only the consumer's redeliveries test its own. On
	// RabbitMQ, the header that carries the id instead of the message_id
	// property. On Kafka, a record header that carries the id as well as
	// the key.
	IDHeader string `yaml:"id_header"`
	// IDField is the entry's field that carries the message id (the op's
	// key); default "message_id".
	IDField string `yaml:"id_field"`
	// BodyField is the entry's field that carries the body; default
	// "body".
	BodyField string `yaml:"body_field"`
}

// PublishFaults are the fault kinds a publish takes: copies of the
// message (a producer's double send), a confirm lost after the broker
// took the message (the producer republishes), a wait before it.
var PublishFaults = []string{faults.KindDuplicate, faults.KindDropAck, faults.KindDelay, faults.KindConsumerCut}

// QueueSchemes are the target schemes of a queue, and the broker each
// names.
var QueueSchemes = map[string]string{"redis": "Redis Streams", "rediss": "Redis Streams (TLS)", "nats": "NATS JetStream", "tls": "NATS JetStream (TLS)",
	"amqp": "RabbitMQ", "amqps": "RabbitMQ (TLS)", "kafka": "Kafka"}

// where names what a publish goes to, by the broker it is for: "stream",
// "subject", "queue" or "topic" (the first set); "" when none is.
func (p *Publish) where() string {
	switch {
	case p.Stream != "":
		return "stream"
	case p.Subject != "":
		return "subject"
	case p.Queue != "":
		return "queue"
	case p.Topic != "":
		return "topic"
	}
	return ""
}

// brokerTakes is what a broker of scheme takes: "stream", "subject",
// "queue" or "topic".
func brokerTakes(scheme string) string {
	switch scheme {
	case "nats", "tls":
		return "subject"
	case "amqp", "amqps":
		return "queue"
	case "kafka":
		return "topic"
	}
	return "stream"
}

func (s *Scenario) publishDefaults() {
	p := s.Operation.Publish
	if p == nil {
		return
	}
	switch {
	case p.Subject != "":
		if p.IDHeader == "" {
			p.IDHeader = "Message-Id"
		}
	case p.Queue != "", p.Topic != "":
		// the message_id property (RabbitMQ) or the record's key (Kafka)
		// carries the id; id_header as well or instead when set
	default:
		if p.IDField == "" {
			p.IDField = "message_id"
		}
		if p.BodyField == "" {
			p.BodyField = "body"
		}
	}
	if s.Operation.Path == "" {
		s.Operation.Path = "/" // no HTTP request: the runner's template wants a path
	}
}

// IsQueue reports whether each op is a message published to a broker.
func (s *Scenario) IsQueue() bool { return s.Operation.Publish != nil }

// BrokerURL is the broker a queue scenario publishes to: override (from
// --target or IDEMCHECK_TARGET) when set, else the scenario's target.
func (s *Scenario) BrokerURL(override string) (*url.URL, error) {
	raw := override
	if raw == "" {
		if len(s.Target) == 0 {
			return nil, &hintError{msg: "no broker to publish to", hint: "target: redis://127.0.0.1:6379/0, or --target"}
		}
		raw = s.Target[0]
	}
	return parseBroker(raw)
}

// ServiceURLs are the HTTP base URLs the oracles and the setup requests
// of a queue scenario read: override when set, else the scenario's
// service.
func (s *Scenario) ServiceURLs(override string) ([]*url.URL, error) {
	raws := []string(s.Service)
	if override != "" {
		raws = []string{override}
	}
	var out []*url.URL
	for _, r := range raws {
		u, err := parseTarget(r)
		if err != nil {
			return nil, fmt.Errorf("service: %w", err)
		}
		out = append(out, u)
	}
	return out, nil
}

// parseBroker checks a queue target: a URL of a known broker scheme with
// a host.
func parseBroker(raw string) (*url.URL, error) {
	const hint = "a broker URL: target: redis://127.0.0.1:6379/0 (a Redis stream; rediss:// for TLS), nats://127.0.0.1:4222 (NATS JetStream), amqp://127.0.0.1:5672/ (RabbitMQ; amqps:// for TLS) or kafka://127.0.0.1:9092 (Kafka); a password goes in --target, not the file"
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &hintError{msg: fmt.Sprintf("bad broker URL %s", redact.String(raw)), hint: hint}
	}
	if _, ok := QueueSchemes[u.Scheme]; !ok || u.Host == "" {
		return nil, &hintError{msg: fmt.Sprintf("target %q is not a broker URL that operation.publish can publish to", redact.URL(u)), hint: hint}
	}
	return u, nil
}

// consumerCut checks a consumer_cut: its rate and listen address, on a
// scenario that publishes.
func (c *checker) consumerCut(at string, f Fault) {
	if !c.s.IsQueue() {
		c.add(at+".kind", "a consumer_cut cuts a queue consumer's broker connection: this scenario publishes nothing", "add operation.publish, or leave the fault out")
	}
	for _, se := range specErrors(faults.CheckConsumerCut(f)) {
		c.add(at+"."+se.Field, se.Problem, "consumer_cut: {rate: 0.05, listen: 127.0.0.1:16379}, with the consumer pointed at redis://127.0.0.1:16379")
	}
}

func (c *checker) publish() {
	p := c.s.Operation.Publish
	if p == nil {
		if len(c.s.Service) > 0 {
			c.add("service", "service names the HTTP API behind a queue target: this scenario publishes nothing", "leave service out, or add operation.publish")
		}
		return
	}
	const at = "operation.publish"
	for i, svc := range c.s.Service {
		if _, err := parseTarget(svc); err != nil {
			field := "service"
			if len(c.s.Service) > 1 {
				field = fmt.Sprintf("service[%d]", i)
			}
			c.add(field, err.Error(), "service: http://127.0.0.1:8080, the API the consumer writes to")
		}
	}
	if len(c.s.Target) > 1 {
		c.add("target", "a queue scenario publishes to one broker", "target: redis://127.0.0.1:6379/0")
	}
	set := 0
	for _, w := range []string{p.Stream, p.Subject, p.Queue, p.Topic} {
		if w != "" {
			set++
		}
	}
	switch {
	case set != 1:
		c.add(at, "say where the message goes: a Redis stream, a NATS subject, a RabbitMQ queue or a Kafka topic, one of them", "stream: charges (redis://), subject: charges (nats://), queue: charges (amqp://) or topic: charges (kafka://)")
	case p.Stream == "" && (p.IDField != "" || p.BodyField != ""):
		c.add(at, "id_field and body_field are a Redis stream entry's; a NATS, RabbitMQ or Kafka message carries its id in a header, property or key", "leave them out; id_header: Message-Id")
	case p.Stream != "" && p.IDHeader != "":
		c.add(at+".id_header", "id_header is a NATS, RabbitMQ or Kafka message's; a Redis stream entry carries its id in a field", "id_field: message_id")
	case p.Topic != "" && p.Group == "":
		c.add(at+".group", "a Kafka topic needs the consumer group that consumes it: the run reads the oracles once the group's committed offsets reach the topic's end", "group: payments-worker (the consumer's group.id)")
	case p.Topic == "" && p.Group != "":
		c.add(at+".group", "group is a Kafka topic's consumer group", "leave it out, or publish to a topic: on kafka://")
	case p.Stream != "" && p.IDField == p.BodyField:
		c.add(at+".id_field", "the message id and the body need fields of their own", "id_field: message_id, body_field: body")
	case p.IDHeader != "" && !headerName.MatchString(p.IDHeader):
		c.add(at+".id_header", fmt.Sprintf("%q is not a valid header name", p.IDHeader), "id_header: Message-Id")
	case p.Queue == "" && (p.Exchange != "" || p.RoutingKey != "" || p.Management != ""):
		c.add(at, "exchange, routing_key and management are a RabbitMQ publish's", "leave them out, or publish to a queue: on amqp://")
	case p.Exchange == "" && p.RoutingKey != "":
		c.add(at+".routing_key", "a routing key routes through an exchange: the default exchange routes by the queue's name", "exchange: payments, or leave routing_key out")
	}
	if m := p.Management; m != "" {
		if u, err := url.Parse(m); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.add(at+".management", fmt.Sprintf("%q is not the http:// URL of RabbitMQ's management API", redact.String(m)), "management: http://127.0.0.1:15672")
		}
	}
	for _, t := range c.s.Target {
		if u, err := parseBroker(t); err == nil && set == 1 && brokerTakes(u.Scheme) != p.where() {
			c.add("target", fmt.Sprintf("a %s broker does not take a %s", QueueSchemes[u.Scheme], p.where()),
				"a Redis stream on redis://, a NATS subject on nats://, a RabbitMQ queue on amqp://, a Kafka topic on kafka://")
		}
	}
	if c.s.Operation.Webhook != nil {
		c.add(at, "a message is published, a webhook delivered: not both", "leave out operation.webhook or operation.publish")
	}
	k := c.s.Operation.Key
	if k.Header != "" || k.BodyField != "" || k.None || k.FromAnswer != nil {
		c.add("operation.key", "the message id is the op's key: it goes in the message (id_field, id_header, the message_id property or the record key), nowhere else", "leave out key (or give key: {value: ...} alone)")
	}
	if len(c.s.Operation.Headers) > 0 || c.s.Operation.Before != nil || c.s.Operation.Replay != nil || len(c.s.Operation.ExpectReject) > 0 ||
		c.s.set("operation.method") || c.s.set("operation.path") || c.s.Operation.Object != "" {
		c.add(at, "method, path, headers, before, replay, expect_reject and object belong to HTTP requests, not to a published message", "leave them out")
	}
	if len(c.s.Setup) > 0 {
		c.add("setup", "setup requests go to an HTTP target: a queue scenario has none yet", "prepare the service before the run, or leave setup out")
	}
	cuts := 0
	for _, f := range c.s.Faults {
		if f.Kind == faults.KindConsumerCut {
			cuts++
		}
		if f.Kind == faults.KindDropAck && !slices.Contains(c.s.Retry.On, "info") {
			c.add("retry.on", "a drop_ack leaves the producer without the broker's confirm: it must publish again (retry on info), or the message's fate is never known", "retry: {attempts: 6, on: [fail, info]}")
		}
	}
	if cuts > 0 && p.Topic != "" {
		c.add("faults", "a consumer_cut cannot be proven on Kafka: a broker does not count what it hands out again (a consumer group refetches from its committed offset), and a consumer reaches the brokers the cluster advertises, not the proxy",
			"test the Kafka consumer with duplicate and drop_ack; a cut consumer's redelivery is proven on Redis Streams, NATS and RabbitMQ")
	}
	if cuts > 1 {
		c.add("faults", "one consumer_cut per scenario: its proxy is the consumer's one way to the broker", "keep one, with the rate you want")
	}
	for i, f := range c.s.Faults {
		if !slices.Contains(PublishFaults, f.Kind) {
			c.add(fmt.Sprintf("faults[%d].kind", i), fmt.Sprintf("a published message takes %v, not %s", PublishFaults, f.Kind),
				"duplicate (copies of the message), drop_ack (a lost confirm: the producer republishes), delay, or consumer_cut (the consumer's broker connection cut)")
		}
	}
	if c.s.Response.Fields != nil || len(c.s.Response.Volatile) > 0 {
		c.add("response", "a publish has no answer body", "leave response out")
	}
	for _, inv := range c.s.Invariants {
		if inv.Check == "same_response" || inv.Check == "rejects_forged" {
			c.add("invariants", inv.Check+" judges HTTP answers: a publish has none", "exactly_once, at_most_once or exact_counter on an effects oracle")
		}
	}
}

// ReadsHTTP reports whether an oracle of s reads over HTTP (from the
// target, or a queue's service) rather than from a database.
func (s *Scenario) ReadsHTTP() bool {
	for _, o := range s.Oracles {
		switch {
		case o.Effects != nil:
			if o.Effects.SQL == nil && o.Effects.Redis == nil {
				return true
			}
		case o.Counter != nil:
			if o.Counter.SQL == nil && o.Counter.Redis == nil {
				return true
			}
		default: // account and state oracles read over HTTP alone
			return true
		}
	}
	return false
}
