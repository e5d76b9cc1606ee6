package queues_test

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testkafka"
	"github.com/idemcheck/idemcheck/lab"
	"github.com/idemcheck/idemcheck/queues"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// kafkaRuns numbers the Kafka runs of this test binary: on a real,
// shared cluster (IDEMCHECK_KAFKA) each run's lab takes a namespace of
// its own, so its topics and group are its own.
var kafkaRuns atomic.Int64

// kafkaLab starts the lab's Kafka consumer group (with bugs) on a
// cluster of its own (kfake), or on IDEMCHECK_KAFKA's under a namespace
// of its own, and returns the built-in name (its topic and group in that
// namespace), the cluster's URL and the lab's.
func kafkaLab(t *testing.T, name string, bugs ...string) (*scenarios.Scenario, string, string) {
	t.Helper()
	url := testkafka.Kafka(t)
	ns := ""
	if testkafka.RealKafka() {
		ns = fmt.Sprintf("idemcheck_test_%d_%d", time.Now().UnixNano(), kafkaRuns.Add(1))
	}
	r, err := lab.Start(context.Background(), lab.Config{Bugs: bugs},
		lab.Backends{Store: "memory", Ledger: "memory", Consumer: url, Namespace: ns}, 1, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	sc, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	if ns != "" {
		p := sc.Operation.Publish
		p.Topic, p.Group = ns+"."+p.Topic, ns+"."+p.Group
	}
	return sc, url, r.URL
}

// runKafka runs the built-in name against the lab's Kafka consumer group
// with bugs (kafkaLab).
func runKafka(t *testing.T, name string, bugs ...string) *trial.Judged {
	t.Helper()
	sc, url, service := kafkaLab(t, name, bugs...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j, err := trial.Run(ctx, sc, trial.Options{Target: url, Service: service, Seed: 7})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { j.History.Spill.Remove() })
	return j
}

// TestKafkaConsumers produces the Kafka built-ins to a Kafka cluster
// (franz-go's in-process kfake, or IDEMCHECK_KAFKA's), where the lab's
// consumer group charges the records: the protected consumer holds
// exactly_once through lost acknowledgements and double produces, every
// fault having bitten; the naive one, and the protected one with a
// seeded bug, are caught.
func TestKafkaConsumers(t *testing.T) {
	t.Parallel()
	for _, tc := range []consumerCase{
		{"protected", "kafka-charges", nil, checks.Pass},
		{"naive", "kafka-charges-naive", nil, checks.Fail},
		{lab.BugConsumerDedupByDeliveryTag, "kafka-charges", []string{lab.BugConsumerDedupByDeliveryTag}, checks.Fail},
		{lab.BugConsumerDedupAfterEffect, "kafka-charges", []string{lab.BugConsumerDedupAfterEffect}, checks.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := runKafka(t, tc.builtin, tc.bugs...)
			v := verdict(j, checks.ExactlyOnce)
			if v.Status != tc.want {
				t.Fatalf("exactly_once = %s (%s %s), want %s", v.Status, v.Summary, v.Reason, tc.want)
			}
			bit := map[string]int{}
			for _, a := range j.History.Attempts {
				if a.Bit {
					bit[a.Fault]++
				}
			}
			if bit["drop_ack"] == 0 || bit["duplicate"] == 0 || !j.History.Meta.BitRecorded {
				t.Errorf("faults that bit: %v (recorded %v), want lost acknowledgements and double produces", bit, j.History.Meta.BitRecorded)
			}
			t.Log(v.Summary)
		})
	}
}

// TestKafkaWithoutConsumer: no group commits the topic, so it never
// drains: the run is inconclusive, naming the group with no member,
// never met nor failed.
func TestKafkaWithoutConsumer(t *testing.T) {
	t.Parallel()
	url := testkafka.Kafka(t)
	ns := "idemcheck_lone"
	if testkafka.RealKafka() {
		ns = fmt.Sprintf("idemcheck_lone_%d", time.Now().UnixNano())
	}
	ctx := context.Background()
	topic := ns + ".lab.charges"
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.TrimPrefix(url, "kafka://")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	r, err := lab.Start(ctx, lab.Config{}, lab.Backends{Store: "memory", Ledger: "memory"}, 1, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	sc, err := scenarios.Builtin("kafka-charges")
	if err != nil {
		t.Fatal(err)
	}
	sc.Operation.Publish.Topic, sc.Operation.Publish.Group = topic, ns+".lab"
	sc.Quiet = scenarios.Duration(300 * time.Millisecond)
	sc.Load.Ops = 20
	j, err := trial.Run(ctx, sc, trial.Options{Target: url, Service: r.URL, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	v := verdict(j, checks.ExactlyOnce)
	if v.Status != checks.Unknown || !strings.Contains(v.Summary+v.Reason, "records of topic "+topic+" to commit") || !strings.Contains(v.Summary+v.Reason, "is the consumer running?") {
		t.Errorf("exactly_once = %s (%s %s), want inconclusive naming what the group has to commit", v.Status, v.Summary, v.Reason)
	}
}

// TestKafkaRefusals: a cluster that does not answer, and a topic no one
// made, stop the run before its load, saying what to check; a
// consumer_cut on Kafka is refused, saying why.
func TestKafkaRefusals(t *testing.T) {
	t.Parallel()
	sc, err := scenarios.Builtin("kafka-charges")
	if err != nil {
		t.Fatal(err)
	}
	var h interface{ Hint() string }
	_, err = trial.Run(context.Background(), sc, trial.Options{Target: "kafka://127.0.0.1:1", Service: "http://127.0.0.1:1", Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "unreachable") || !errors.As(err, &h) || !strings.Contains(h.Hint(), "is Kafka running") {
		t.Errorf("error = %v, want the cluster unreachable, and what to check", err)
	}

	url := testkafka.Kafka(t)
	sc.Operation.Publish.Topic = fmt.Sprintf("idemcheck.nobody.%d", time.Now().UnixNano())
	u, _ := neturl.Parse(url)
	p, err := queues.NewKafka(sc, u, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetTopicWait(300 * time.Millisecond) // 5 s in use, for the consumer's side to make it
	err = p.Ping(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no topic "+sc.Operation.Publish.Topic) || !errors.As(err, &h) || !strings.Contains(h.Hint(), "create the topic") {
		t.Errorf("error = %v, want no such topic, and how to make it", err)
	}

	sc.Faults = append(sc.Faults, scenarios.Fault{Kind: "consumer_cut", Rate: 0.2, Listen: "127.0.0.1:19092"})
	if ds := sc.Validate(); !strings.Contains(fmt.Sprint(ds), "a consumer_cut cannot be proven on Kafka") {
		t.Errorf("Validate() = %v, want the consumer_cut refused on Kafka", ds)
	}
}

// stalledKafka is a kfake cluster with a topic "stall" and the
// scenario kafka-charges producing to it, whose producer has answered
// Ping: from then on, the requests control takes are never answered.
func stalledKafka(t *testing.T) (*kfake.Cluster, *queues.Kafka) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "stall"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	sc, err := scenarios.Builtin("kafka-charges")
	if err != nil {
		t.Fatal(err)
	}
	sc.Operation.Publish.Topic = "stall"
	u, _ := neturl.Parse("kafka://" + c.ListenAddrs()[0])
	p, err := queues.NewKafka(sc, u, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, p
}

// TestKafkaSendEndsWithItsContext: a cluster that took the produce
// request and never answers does not hold a publish past its context
// (Ctrl-C, the run's deadline): the idempotent producer gives the record
// up, and the attempt is not confirmed (the broker may have appended it),
// never certainly not published.
func TestKafkaSendEndsWithItsContext(t *testing.T) {
	if testkafka.RealKafka() {
		t.Skip("a real cluster cannot be told to stop answering") // the fake is what CI runs
	}
	t.Parallel()
	c, p := stalledKafka(t)
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, nil, true // taken, never answered
	})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	a := &history.Attempt{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Send(ctx, scenarios.Vars{Key: "k1"}, nil, a, func() time.Duration { return time.Since(start) }); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-done:
	case <-time.After(queues.KafkaDeliveryTimeout / 2):
		t.Fatalf("Send still waits %s after its context ended", time.Since(start)-500*time.Millisecond)
	}
	if a.Outcome != history.Info || !strings.Contains(a.Err, "not confirmed") {
		t.Errorf("attempt = %s %q, want info, not confirmed", a.Outcome, a.Err)
	}
}

// TestKafkaDrainedIsBounded: a cluster that stopped answering costs one
// drain poll a bounded wait, and an error, not the rest of the run.
func TestKafkaDrainedIsBounded(t *testing.T) {
	if testkafka.RealKafka() {
		t.Skip("a real cluster cannot be told to stop answering")
	}
	t.Parallel()
	c, p := stalledKafka(t)
	p.SetAskWait(500 * time.Millisecond) // 5 s in use: what is proven is that it ends
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, nil, true
	})
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, _, err := p.Drained(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("Drained on a silent cluster = nil error, want one")
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("Drained still waits after %s on a silent cluster", time.Since(start))
	}
}
