package queues_test

import (
	"context"
	"errors"
	"strings"
	"sync"
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

// consumerLab starts the lab's consumers (with bugs) on a broker of
// their own and returns the built-in name publishing there, the broker's
// URL and the lab's.
type consumerLab func(t *testing.T, name string, bugs ...string) (sc *scenarios.Scenario, target, service string)

// labOn is the consumerLab of a broker that start starts.
func labOn(start func(testing.TB) broker) consumerLab {
	return func(t *testing.T, name string, bugs ...string) (*scenarios.Scenario, string, string) {
		b := start(t)
		return builtin(t, name, b), b.url, startLab(t, b.url, bugs...)
	}
}

// checkBattery runs audit's consumer battery against the lab's consumers
// on one broker: the protected one holds every check it can run (Q02
// needs a consumer_cut, which the built-ins protected and naive have
// not), the naive one is caught applying a copy published twice (Q01)
// and a message published again later (Q03), and a consumer that hands
// a poison message back forever is caught by Q04, though it charges
// every valid message. quiet bounds each run's wait for the drain; the
// poison's run, which never drains, waits all of it out, so in the fast
// suite it is given a third of quiet (its valid messages are applied in
// milliseconds), all of it in the long suite (the race detector, a
// loaded machine).
func checkBattery(t *testing.T, setup consumerLab, protected, naive string, quiet time.Duration) {
	type want map[string]checks.Status
	cases := []struct {
		name, scenario string
		bugs           []string
		checks         []string
		want           want
		result         checks.Result
	}{
		{"protected", protected, nil, nil,
			want{"Q01": checks.Pass, "Q02": checks.Skipped, "Q03": checks.Pass, "Q04": checks.Pass}, checks.Met},
		{"naive", naive, nil, []string{"Q01", "Q03"},
			want{"Q01": checks.Fail, "Q02": checks.Skipped, "Q03": checks.Fail, "Q04": checks.Skipped}, checks.NotMet},
		{"poison retried", protected, []string{lab.BugConsumerPoisonRetried}, []string{"Q01", "Q04"},
			want{"Q01": checks.Pass, "Q04": checks.Fail}, checks.NotMet},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, target, service := setup(t, tc.scenario, tc.bugs...)
			sc.Quiet = scenarios.Duration(quiet)
			if len(tc.bugs) > 0 && tc.bugs[0] == lab.BugConsumerPoisonRetried {
				sc.Quiet = scenarios.Duration(testenv.Pick(quiet/3, quiet))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var ran []string
			card, err := trial.Battery(ctx, sc, trial.BatteryOptions{Options: trial.Options{Target: target, Service: service},
				Checks: tc.checks, Late: 200 * time.Millisecond, FailOn: "medium", Progress: func(id, _ string) { ran = append(ran, id) }})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range card.Checks {
				if w, ok := tc.want[c.ID]; ok && c.Result != w {
					t.Errorf("%s %s = %s (%s), want %s", c.ID, c.Name, c.Result, c.Summary, w)
				}
				if c.Result == checks.Fail && len(c.Evidence) == 0 && c.ID != trial.QPoisonThenValid {
					t.Errorf("%s failed without evidence", c.ID)
				}
			}
			if card.Result != tc.result || card.Requests == 0 || card.Target == "" {
				t.Errorf("scorecard %s (%s), %d publishes to %q; want %s", card.Result, card.Why, card.Requests, card.Target, tc.result)
			}
			t.Logf("ran %v: %s", ran, card.Why)
		})
	}
}

// TestConsumerBattery: the consumer battery on a real Redis.
func TestConsumerBattery(t *testing.T) {
	testsvc.Need(t, testsvc.RedisServer)
	t.Parallel()
	checkBattery(t, labOn(redisBroker), "stream-charges", "stream-charges-naive", 3*time.Second)
}

// TestConsumerBatteryKafka: the consumer battery on Kafka (kfake, or
// IDEMCHECK_KAFKA's cluster): a poison record stalls its partition.
func TestConsumerBatteryKafka(t *testing.T) {
	t.Parallel()
	checkBattery(t, kafkaLab, "kafka-charges", "kafka-charges-naive", 5*time.Second)
}

// TestConsumerBatteryNATS: the consumer battery on a real nats-server
// with JetStream: a poison message handed back is redelivered forever.
func TestConsumerBatteryNATS(t *testing.T) {
	testenv.SkipUnlessLong(t) // the fast suite proves the battery on Redis and Kafka
	testsvc.Need(t, testsvc.NATSServer)
	t.Parallel()
	checkBattery(t, labOn(natsBroker), "nats-charges", "nats-charges-naive", 8*time.Second)
}

// TestConsumerBatteryNATSWindow: with the id in Nats-Msg-Id, JetStream
// drops a message published again within its duplicate window, so the
// naive consumer is never handed one: Q01's copies and Q03's republish
// test the broker, and the battery says so (unknown), neither passing
// the naive consumer nor accusing it.
func TestConsumerBatteryNATSWindow(t *testing.T) {
	testenv.SkipUnlessLong(t)
	testsvc.Need(t, testsvc.NATSServer)
	t.Parallel()
	sc, target, service := labOn(natsBroker)(t, "nats-charges-naive")
	sc.Operation.Publish.IDHeader = "Nats-Msg-Id"
	sc.Quiet = scenarios.Duration(8 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	card, err := trial.Battery(ctx, sc, trial.BatteryOptions{Options: trial.Options{Target: target, Service: service},
		Checks: []string{"Q01", "Q03"}, Late: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if q01 := card.Checks[0]; q01.Result != checks.Unknown || !strings.Contains(q01.Summary, "the broker stored no message twice") {
		t.Errorf("Q01 = %s (%s), want unknown: the broker dropped the copies", q01.Result, q01.Summary)
	}
	if q03 := card.Checks[2]; q03.Result != checks.Unknown || !strings.Contains(q03.Summary, "dropped every one as a duplicate") {
		t.Errorf("Q03 = %s (%s), want unknown: the broker dropped the republish", q03.Result, q03.Summary)
	}
	if card.Result != checks.Inconclusive {
		t.Errorf("scorecard %s (%s), want inconclusive", card.Result, card.Why)
	}
	for _, c := range card.Checks {
		t.Logf("%s %s: %s", c.ID, c.Result, c.Summary)
	}
}

// TestConsumerBatteryRabbitMQ: the consumer battery on a real RabbitMQ:
// a poison message nacked back is requeued forever.
func TestConsumerBatteryRabbitMQ(t *testing.T) {
	testenv.SkipUnlessLong(t)
	testsvc.Need(t, testsvc.RabbitMQServer)
	t.Parallel()
	checkBattery(t, labOn(rabbitBroker), "amqp-charges", "amqp-charges-naive", 8*time.Second)
}

// TestConsumerBatteryCut: Q02 runs the scenario's consumer_cut (the lab's
// consumer reaching Redis through its proxy): the naive consumer is
// caught applying a redelivered message again, the protected one holds.
func TestConsumerBatteryCut(t *testing.T) {
	testsvc.Need(t, testsvc.RedisServer)
	t.Parallel()
	for _, tc := range []struct {
		scenario string
		want     checks.Status
	}{{"stream-charges", checks.Pass}, {"stream-charges-naive", checks.Fail}} {
		// the protected consumer runs the whole battery behind the proxy:
		// the other checks' runs reach the broker through it, uncut
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			b := redisBroker(t)
			var card *checks.Scorecard
			var err error
			// a port free when chosen may be taken before the proxy
			// listens; a cut that never bit is judged unknown, and tried
			// again (cutTries)
			for try := 1; try <= cutTries; try++ {
				listen := freeAddr(t)
				service := startLab(t, "redis://"+listen+"/0")
				sc := builtin(t, tc.scenario, b)
				sc.Faults = append(sc.Faults, scenarios.Fault{Kind: "consumer_cut", Rate: 0.2, Listen: listen})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				only := []string{trial.QCutConsumer}
				if tc.want == checks.Pass {
					only = nil
				}
				card, err = trial.Battery(ctx, sc, trial.BatteryOptions{Options: trial.Options{Target: b.url, Service: service}, Checks: only,
					Late: 200 * time.Millisecond, FailOn: "medium"})
				cancel()
				if err != nil && strings.Contains(err.Error(), "address already in use") {
					continue
				}
				if q := cutCheck(card); err == nil && q != nil && q.Result == checks.Unknown && strings.Contains(q.Summary, "never bit") && try < cutTries {
					t.Logf("try %d: %s %s: %s; trying again", try, q.ID, q.Result, q.Summary)
					continue
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range card.Checks {
				switch {
				case q.ID == trial.QCutConsumer && q.Result != tc.want:
					t.Errorf("%s = %s (%s), want %s", q.ID, q.Result, q.Summary, tc.want)
				case q.ID != trial.QCutConsumer && tc.want == checks.Pass && q.Result != checks.Pass:
					t.Errorf("%s = %s (%s) behind the proxy, want pass", q.ID, q.Result, q.Summary)
				}
				t.Logf("%s %s: %s", q.ID, q.Result, q.Summary)
			}
		})
	}
}

// cutCheck returns the scorecard's Q02, or nil.
func cutCheck(card *checks.Scorecard) *checks.ContractCheck {
	for i := range card.Checks {
		if card.Checks[i].ID == trial.QCutConsumer {
			return &card.Checks[i]
		}
	}
	return nil
}

// TestConsumerBatteryInterrupted: an interrupt mid-battery keeps what was
// judged: the scorecard comes back with the interruption, the checks
// before it judged, the rest skipped, and nothing met.
func TestConsumerBatteryInterrupted(t *testing.T) {
	testsvc.Need(t, testsvc.RedisServer)
	t.Parallel()
	for _, tc := range []struct {
		name string
		// stop arms an interruption once Q03 starts; obs hears its runs.
		stop func(cancel context.CancelFunc, obs *cancelAtLoadEnd)
	}{
		// the CI case: the first publish's load is done, its drain or
		// reading interrupted, and Q03 is not judged from it
		{"in the first publish's drain", func(cancel context.CancelFunc, obs *cancelAtLoadEnd) { obs.arm(cancel) }},
		{"at 300ms", func(cancel context.CancelFunc, _ *cancelAtLoadEnd) { time.AfterFunc(300*time.Millisecond, cancel) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, target, service := labOn(redisBroker)(t, "stream-charges")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			obs := &cancelAtLoadEnd{}
			card, err := trial.Battery(ctx, sc, trial.BatteryOptions{Options: trial.Options{Target: target, Service: service, Observer: obs}, Late: 5 * time.Second,
				Progress: func(id, _ string) {
					if id == trial.QLateRedelivery {
						tc.stop(cancel, obs)
					}
				}})
			if !errors.Is(err, context.Canceled) || card == nil {
				t.Fatalf("Battery = %v, %v; want the scorecard and the interruption", card, err)
			}
			got := map[string]checks.Status{}
			for _, c := range card.Checks {
				got[c.ID] = c.Result
			}
			if got["Q01"] != checks.Pass || got["Q03"] != checks.Skipped || got["Q04"] != checks.Skipped || !card.Interrupted || card.Result != checks.Inconclusive {
				t.Errorf("interrupted battery: %v, interrupted %v, %s; want Q01 judged, Q03 and Q04 skipped, inconclusive", got, card.Interrupted, card.Result)
			}
		})
	}
}

// cancelAtLoadEnd cancels, once armed, when the run it hears has done
// every op of its load.
type cancelAtLoadEnd struct {
	mu          sync.Mutex
	total, done int
	cancel      context.CancelFunc
}

func (c *cancelAtLoadEnd) arm(cancel context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancel = cancel
}

func (c *cancelAtLoadEnd) Start(total int, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total, c.done = total, 0
}

func (c *cancelAtLoadEnd) OpDone(int, history.OpState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done++; c.cancel != nil && c.done == c.total {
		c.cancel()
	}
}
