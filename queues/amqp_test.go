package queues_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
	"github.com/idemcheck/idemcheck/lab"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
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
	}, 0.2, []consumerCase{
		{"protected", "amqp-charges", nil, checks.Pass},
		{"naive", "amqp-charges-naive", nil, checks.Fail},
	})
}

// TestAMQPBrokerDown: an unreachable broker stops the run before its
// load, saying what to check.
func TestAMQPBrokerDown(t *testing.T) {
	t.Parallel()
	sc, err := scenarios.Builtin("amqp-charges")
	if err != nil {
		t.Fatal(err)
	}
	_, err = trial.Run(context.Background(), sc, trial.Options{Target: "amqp://guest:s3cret@127.0.0.1:1/", Service: "http://127.0.0.1:1", Seed: 1})
	var h interface{ Hint() string }
	if err == nil || !strings.Contains(err.Error(), "unreachable") || !errors.As(err, &h) || !strings.Contains(h.Hint(), "is rabbitmq-server running") {
		t.Fatalf("error = %v, want the broker unreachable, and what to check", err)
	}
	if strings.Contains(err.Error()+h.Hint(), "s3cret") {
		t.Errorf("the error shows the password: %v", err)
	}
}

// TestAMQPWhereItGoes: a publish no queue takes (an exchange without a
// binding) is returned, and recorded as certainly not published; a
// management API that does not answer stops the run before its load,
// saying how to turn it on.
func TestAMQPWhereItGoes(t *testing.T) {
	testenv.SkipUnlessLong(t)
	t.Parallel()
	b := rabbitBroker(t)
	service := startLab(t, b.url) // its consumers declare the queues
	sc := builtin(t, "amqp-charges", b)
	sc.Operation.Publish.Exchange, sc.Operation.Publish.RoutingKey = "amq.direct", "nowhere"
	sc.Faults, sc.Load.Ops, sc.Quiet = nil, 5, scenarios.Duration(200*time.Millisecond)
	j, err := trial.Run(context.Background(), sc, trial.Options{Target: b.url, Service: service, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range j.History.Attempts {
		if a.Outcome != history.Fail || !strings.Contains(a.Err, "no queue took it") {
			t.Fatalf("attempt %+v: want failed, returned by the broker", a)
		}
	}
	sc = builtin(t, "amqp-charges", b)
	sc.Operation.Publish.Management = "http://127.0.0.1:1"
	_, err = trial.Run(context.Background(), sc, trial.Options{Target: b.url, Service: service, Seed: 1})
	var h interface{ Hint() string }
	if err == nil || !errors.As(err, &h) || !strings.Contains(h.Hint(), "rabbitmq_management") {
		t.Fatalf("error = %v, want the management API unreachable, and how to turn it on", err)
	}
}
