package scenarios

import (
	"strings"
	"testing"
)

const publishing = `name: p
target: redis://127.0.0.1:6379/0
operation:
  publish: {stream: charges}
  body: '{"amount":100}'
load: {ops: 10, concurrency: 2}
retry: {attempts: 3, on: [fail, info]}
faults:
  - {kind: drop_ack, rate: 0.1}
oracles:
  - name: ledger
    effects: {bulk: {path: /counts, value: $.counts}}
invariants:
  - {check: exactly_once, oracle: ledger}
`

// A scenario that publishes validates as a queue's: the broker as target,
// its key the message id, HTTP-only fields and faults refused, each
// with what to write instead.
func TestPublishValidation(t *testing.T) {
	s, err := Parse("t.yaml", []byte(publishing))
	if err != nil {
		t.Fatalf("Parse(publishing) = %v", err)
	}
	if !s.IsQueue() || s.Operation.Publish.IDField != "message_id" || s.Operation.Publish.BodyField != "body" {
		t.Errorf("publish defaults: %+v", s.Operation.Publish)
	}
	for _, tc := range []struct {
		name, from, to string
		want           []want
	}{
		{"stream and subject", "{stream: charges}", "{stream: charges, subject: x}", []want{{4, "operation.publish", "one of them"}}},
		{"stream and queue", "{stream: charges}", "{stream: charges, queue: x}", []want{{4, "operation.publish", "one of them"}}},
		{"a queue on redis", "{stream: charges}", "{queue: charges}", []want{{2, "target", "does not take a queue"}}},
		{"a stream on amqp", "redis://127.0.0.1:6379/0", "amqp://127.0.0.1:5672/", []want{{2, "target", "RabbitMQ broker does not take a stream"}}},
		{"an exchange on a stream", "{stream: charges}", "{stream: charges, exchange: x}", []want{{4, "operation.publish", "RabbitMQ publish's"}}},
		{"a subject on redis", "{stream: charges}", "{subject: charges}", []want{{2, "target", "does not take a subject"}}},
		{"a key header", "  body:", "  key: {header: Idempotency-Key}\n  body:", []want{{5, "operation.key", "message id is the op's key"}}},
		{"a method", "  body:", "  method: PUT\n  body:", []want{{4, "operation.publish", "belong to HTTP requests"}}},
		{"setup", "operation:", "setup: [{path: /reset}]\noperation:", []want{{3, "setup", "HTTP target"}}},
		{"a timeout", "{kind: drop_ack, rate: 0.1}", "{kind: timeout, rate: 0.1, after: 5ms}", []want{{9, "faults[0].kind", "a published message takes"}}},
		{"drop_ack without info", "on: [fail, info]", "on: [fail]", []want{{7, "retry.on", "publish again"}}},
		{"two cuts", "  - {kind: drop_ack, rate: 0.1}", "  - {kind: consumer_cut, rate: 0.1, listen: 127.0.0.1:1}\n  - {kind: consumer_cut, rate: 0.1, listen: 127.0.0.1:2}",
			[]want{{8, "faults", "one consumer_cut"}}},
		{"a cut without listen", "{kind: drop_ack, rate: 0.1}", "{kind: consumer_cut, rate: 0.1}", []want{{9, "faults[0].listen", "proxy's address"}}},
		{"an HTTP target", "redis://127.0.0.1:6379/0", "http://127.0.0.1:8080", []want{{2, "target", "not a broker URL"}}},
		{"same_response", "{check: exactly_once, oracle: ledger}", "{check: same_response}", []want{{13, "invariants", "a publish has none"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(publishing, tc.from, tc.to, 1)
			if src == publishing {
				t.Fatalf("%q not in the scenario", tc.from)
			}
			checkDiags(t, diagnose(t, src), tc.want)
		})
	}
	// a RabbitMQ queue: the message_id property, unless id_header says
	amqp := strings.NewReplacer("redis://127.0.0.1:6379/0", "amqp://guest:guest@127.0.0.1:5672/", "{stream: charges}", "{queue: charges}").Replace(publishing)
	if s, err := Parse("t.yaml", []byte(amqp)); err != nil || s.Operation.Publish.IDHeader != "" || s.Operation.Publish.IDField != "" {
		t.Errorf("a RabbitMQ publish: %v, %+v; want it valid, with no id header or field by default", err, s.Operation.Publish)
	}
	routed := strings.Replace(amqp, "{queue: charges}", "{queue: charges, routing_key: x}", 1)
	checkDiags(t, diagnose(t, routed), []want{{4, "operation.publish.routing_key", "through an exchange"}})
	badAPI := strings.Replace(amqp, "{queue: charges}", "{queue: charges, management: 'ftp://x'}", 1)
	checkDiags(t, diagnose(t, badAPI), []want{{4, "operation.publish.management", "management API"}})
	// service: on a scenario that publishes nothing
	http := strings.Replace(valid, "name: t\n", "name: t\nservice: http://127.0.0.1:1\n", 1)
	checkDiags(t, diagnose(t, http), []want{{2, "service", "publishes nothing"}})
}

// ReadsHTTP says whether a queue scenario needs a service to read: an
// oracle that reads a database (effects or counter, SQL or Redis) needs
// none; one that reads over HTTP does.
func TestReadsHTTP(t *testing.T) {
	for _, tc := range []struct {
		name, oracle string
		want         bool
	}{
		{"effects over HTTP", "effects: {bulk: {path: /counts, value: $.counts}}", true},
		{"effects in Redis", "effects: {redis: {url: 'redis://127.0.0.1:6379/0', pattern: 'c:%s'}}", false},
		{"counter over HTTP", "counter: {path: /likes, value: $.likes}", true},
		{"counter in Redis", "counter: {redis: {url: 'redis://127.0.0.1:6379/0', key: likes}}", false},
		{"counter in SQL", "counter: {sql: {url: 'postgres://127.0.0.1/x', query: 'select 1'}}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(publishing, "effects: {bulk: {path: /counts, value: $.counts}}", tc.oracle, 1)
			if strings.Contains(tc.oracle, "counter") {
				src = strings.Replace(src, "{check: exactly_once, oracle: ledger}", "{check: exact_counter, oracle: ledger}", 1)
			}
			s, err := Parse("t.yaml", []byte(src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := s.ReadsHTTP(); got != tc.want {
				t.Errorf("ReadsHTTP() = %v, want %v", got, tc.want)
			}
		})
	}
}
