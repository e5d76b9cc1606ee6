package queues_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
	"github.com/idemcheck/idemcheck/lab"
)

// TestNATSConsumers publishes the NATS built-ins to a real nats-server
// with JetStream, where the lab's consumers charge them: the protected
// consumer holds exactly_once through lost acknowledgements and double
// publishes (every fault having bitten); the naive one, and
// consumer-dedup-by-delivery-tag (a republish is a new delivery), are
// caught.
func TestNATSConsumers(t *testing.T) {
	testenv.SkipUnlessLong(t) // the fast suite proves the consumers on Redis; .ci/run runs this
	t.Parallel()
	testsvc.Need(t, testsvc.NATSServer)
	checkConsumers(t, natsBroker, []consumerCase{
		{"protected", "nats-charges", nil, checks.Pass},
		{"naive", "nats-charges-naive", nil, checks.Fail},
		{lab.BugConsumerDedupByDeliveryTag, "nats-charges", []string{lab.BugConsumerDedupByDeliveryTag}, checks.Fail},
	})
}

// TestNATSConsumerCut cuts the consumers' connection to nats-server
// during the load: JetStream redelivers what was not acknowledged within
// its ack wait, for real. The protected consumer charges each message
// once; the naive one charges a redelivery again. (ack-before-effect is
// proven on Redis, TestStreamConsumerCut: on NATS its loss needs a cut on
// the answer to a double acknowledgement, which too few chunks carry for
// a test that must not flake.)
func TestNATSConsumerCut(t *testing.T) {
	testenv.SkipUnlessLong(t)
	t.Parallel()
	testsvc.Need(t, testsvc.NATSServer)
	checkCuts(t, natsBroker, func(listen string, _ broker) string { return "nats://" + listen }, 0.2, []consumerCase{
		{"protected", "nats-charges", nil, checks.Pass},
		{"naive", "nats-charges-naive", nil, checks.Fail},
	})
}
