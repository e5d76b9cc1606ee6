package queues_test

import (
	"net/url"
	"testing"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
	"github.com/idemcheck/idemcheck/lab"
)

// TestAMQPConsumers publishes the RabbitMQ built-ins to a real
// rabbitmq-server with publisher confirms, where the lab's consumers
// charge them: the protected consumer holds exactly_once through lost
// confirms and double publishes (every fault having bitten); the naive
// one, and the protected one with a seeded bug, are caught.
func TestAMQPConsumers(t *testing.T) {
	testenv.SkipUnlessLong(t) // an Erlang node takes seconds to boot; the fast suite proves the consumers on Redis
	t.Parallel()
	testsvc.Need(t, testsvc.RabbitMQServer)
	checkConsumers(t, rabbitBroker, []consumerCase{
		{"protected", "amqp-charges", nil, checks.Pass},
		{"naive", "amqp-charges-naive", nil, checks.Fail},
		{lab.BugConsumerDedupByDeliveryTag, "amqp-charges", []string{lab.BugConsumerDedupByDeliveryTag}, checks.Fail},
		{lab.BugConsumerDedupAfterEffect, "amqp-charges", []string{lab.BugConsumerDedupAfterEffect}, checks.Fail},
	})
}

// TestAMQPConsumerCut cuts the consumers' connection to RabbitMQ during
// the load: the broker redelivers what a closed channel had not
// acknowledged, for real, and the management API counts it. The
// protected consumer charges each message once; the naive one charges a
// redelivery again.
func TestAMQPConsumerCut(t *testing.T) {
	testenv.SkipUnlessLong(t)
	t.Parallel()
	testsvc.Need(t, testsvc.RabbitMQServer)
	checkCuts(t, rabbitBroker, func(listen string, b broker) string {
		u, _ := url.Parse(b.url)
		u.Host = listen
		return u.String()
	}, 0.1, []consumerCase{
		{"protected", "amqp-charges", nil, checks.Pass},
		{"naive", "amqp-charges-naive", nil, checks.Fail},
	})
}
