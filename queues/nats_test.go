package queues_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/testsvc"
	"github.com/idemcheck/idemcheck/lab"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// TestNATSConsumers publishes the NATS built-ins to a real nats-server
// with JetStream, where the lab's consumers charge them: the protected
// consumer holds exactly_once through lost acknowledgements and double
// publishes (every fault having bitten); the naive one, and
// consumer-dedup-by-delivery-tag (a republish is a new delivery), are
// caught.
func TestNATSConsumers(t *testing.T) {
	t.Parallel()
	testsvc.Need(t, testsvc.NATSServer)
	for _, tc := range []struct {
		name, builtin string
		bugs          []string
		want          checks.Status
	}{
		{"protected", "nats-charges", nil, checks.Pass},
		{"naive", "nats-charges-naive", nil, checks.Fail},
		{lab.BugConsumerDedupByDeliveryTag, "nats-charges", []string{lab.BugConsumerDedupByDeliveryTag}, checks.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			broker := testsvc.NATS(t)
			j := run(t, tc.builtin, broker, startLab(t, broker, tc.bugs...))
			v := verdict(j, checks.ExactlyOnce)
			if v.Status != tc.want {
				t.Fatalf("exactly_once = %s (%s), want %s", v.Status, v.Summary, tc.want)
			}
			bit := map[string]int{}
			for _, a := range j.History.Attempts {
				if a.Bit {
					bit[a.Fault]++
				}
			}
			if bit["drop_ack"] == 0 || bit["duplicate"] == 0 {
				t.Errorf("faults that bit: %v, want lost acknowledgements and double publishes", bit)
			}
		})
	}
}

// TestNATSConsumerCut cuts the consumers' connection to nats-server
// during the load: JetStream redelivers what was not acknowledged within
// its ack wait, for real. The protected consumer charges each message
// once; the naive one charges a redelivery again, and ack-before-effect
// leaves a message uncharged when its acknowledgement's answer is cut.
func TestNATSConsumerCut(t *testing.T) {
	t.Parallel()
	testsvc.Need(t, testsvc.NATSServer)
	for _, tc := range []struct {
		name, builtin string
		bugs          []string
		want          checks.Status
	}{
		{"protected", "nats-charges", nil, checks.Pass},
		{"naive", "nats-charges-naive", nil, checks.Fail},
		{lab.BugConsumerAckBeforeEffect, "nats-charges", []string{lab.BugConsumerAckBeforeEffect}, checks.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			broker := testsvc.NATS(t)
			listen := freeAddr(t)
			service := startLab(t, "nats://"+listen, tc.bugs...)
			sc, err := scenarios.Builtin(tc.builtin)
			if err != nil {
				t.Fatal(err)
			}
			sc.Faults = []scenarios.Fault{{Kind: "consumer_cut", Rate: 0.2, Listen: listen}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			j, err := trial.Run(ctx, sc, trial.Options{Target: broker, Service: service, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			cc := j.History.Meta.ConsumerCut
			if cc == nil || cc.Cuts == 0 || cc.Redelivered == 0 {
				t.Fatalf("consumer_cut = %+v, want connections cut and messages redelivered (counted from the consumers' delivery sequences)", cc)
			}
			v := verdict(j, checks.ExactlyOnce)
			if v.Status != tc.want {
				t.Fatalf("exactly_once = %s (%s), want %s; %d cuts, %d redelivered", v.Status, v.Summary, tc.want, cc.Cuts, cc.Redelivered)
			}
			t.Logf("%d cuts, %d redelivered; %s", cc.Cuts, cc.Redelivered, v.Summary)
		})
	}
}
