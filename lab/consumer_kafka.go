package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/idemcheck/idemcheck/internal/pause"
)

// The Kafka side of the lab's consumers: one consumer group reads both
// topics, each record's key its message id, and charges a poll's records
// at once as the other consumers do; it commits the poll's offsets once
// every record in it is done with. A record whose charge failed is
// charged again in place (a partition is a log: nothing after it is
// committed first). What a consumer fetched and did not commit, the
// group fetches again after a rebalance or a restart: Kafka's
// redelivery.
const (
	// KafkaTopic is the protected consumer's topic; KafkaNaiveTopic the
	// naive one's.
	KafkaTopic, KafkaNaiveTopic = "lab.charges", "lab.charges.naive"
	// KafkaGroup is the consumer group that reads both.
	KafkaGroup = "lab"
	// kafkaPartitions is how many partitions the lab gives each topic it
	// creates.
	kafkaPartitions = 4
)

// startKafkaConsumers starts the consumer group on the Kafka cluster at
// raw (kafka://HOST:PORT): it creates the topics once the cluster
// answers, then consumes.
func (s *Server) startKafkaConsumers(ctx context.Context, raw, namespace, name string) (*Consumers, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, &ConfigError{Field: "consumer", Value: redact(raw), Problem: badConsumerURL}
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "9092")
	}
	topic, naiveTopic, group := KafkaTopic, KafkaNaiveTopic, KafkaGroup
	if namespace != "" {
		topic, naiveTopic, group = namespace+"."+topic, namespace+"."+naiveTopic, namespace+"."+group
	}
	base := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(5 * time.Second), kgo.ClientID("idemcheck-lab-" + name),
		kgo.MetadataMinAge(200 * time.Millisecond)}
	if u.User != nil {
		pass, _ := u.User.Password()
		base = append(base, kgo.SASL(plain.Auth{User: u.User.Username(), Pass: pass}.AsMechanism()))
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Consumers{cancel: cancel, close: func() {}}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if !s.kafkaTopics(cctx, base, topic, naiveTopic) {
			return
		}
		cl, err := kgo.NewClient(append(base, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic, naiveTopic),
			kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(200*time.Millisecond))...)
		if err != nil {
			s.log.Warn("consumer: Kafka client", "err", err)
			return
		}
		defer cl.Close() // leaves the group: its partitions go to another member at once
		w := &kafkaWorker{s: s, cl: cl, naiveTopic: naiveTopic}
		w.read(cctx)
	}()
	return c, nil
}

// kafkaTopics creates the topics, trying again until the cluster answers
// or ctx ends (false then).
func (s *Server) kafkaTopics(ctx context.Context, opts []kgo.Opt, topics ...string) bool {
	for {
		err := createTopics(ctx, opts, topics)
		if err == nil {
			return true
		}
		s.log.Warn("consumer: waiting for the Kafka cluster", "err", err)
		if !pause.For(ctx, 200*time.Millisecond) {
			return false
		}
	}
}

func createTopics(ctx context.Context, opts []kgo.Opt, topics []string) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopics(cctx, kafkaPartitions, -1, nil, topics...)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}

// kafkaWorker is the lab's member of its consumer group.
type kafkaWorker struct {
	s          *Server
	cl         *kgo.Client
	naiveTopic string
}

// kafkaRetry is how long a record whose charge failed waits before it is
// charged again.
const kafkaRetry = 100 * time.Millisecond

// read polls records, charges each poll's at once, and commits them,
// until ctx ends. Rebalances wait for a poll's commit (BlockRebalanceOnPoll),
// so a record is never committed by a member that lost its partition.
func (w *kafkaWorker) read(ctx context.Context) {
	for ctx.Err() == nil {
		fs := w.cl.PollRecords(ctx, 64)
		if fs.IsClientClosed() {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			if ctx.Err() == nil {
				w.s.log.Warn("consumer: Kafka fetch", "topic", t, "partition", p, "err", err)
			}
		})
		recs := fs.Records()
		var wg sync.WaitGroup
		done := make([]bool, len(recs))
		for i, r := range recs {
			wg.Add(1)
			go func() { defer wg.Done(); done[i] = w.handle(ctx, r) }()
		}
		wg.Wait()
		all := true
		for _, d := range done {
			all = all && d
		}
		if all && len(recs) > 0 {
			w.commit(ctx, recs)
		}
		w.cl.AllowRebalance()
	}
}

// handle charges one record (consume) until it is done with, or ctx
// ends (false then: it is not committed, and the group fetches it
// again). A record has no acknowledgement of its own: a partition's
// committed offset covers every record before it, so the poll's records
// are committed together once each is done with (committing one while
// an earlier one of its partition is still being charged would give
// that one up). The seeded ack-before-effect bug has nothing to lose
// here: it is caught where a cut loses an acknowledgement's answer
// (Redis, NATS, RabbitMQ).
func (w *kafkaWorker) handle(ctx context.Context, r *kgo.Record) bool {
	tag := fmt.Sprintf("record:%d:%d", r.Partition, r.Offset) // new on every publish
	acked := false
	ack := func() error { acked = true; return nil }
	for {
		if w.s.consume(ctx, string(r.Key), r.Value, tag, r.Topic == w.naiveTopic, ack) || acked {
			return true
		}
		if !pause.For(ctx, kafkaRetry) {
			return false
		}
	}
}

// commit commits the poll's records, trying again (ten times, while ctx
// lasts) when the cluster does not take it: a commit lost here leaves
// the drain waiting for one no one sends until the group fetches the
// records again (they are deduplicated).
func (w *kafkaWorker) commit(ctx context.Context, recs []*kgo.Record) {
	for try := 1; ; try++ {
		err := w.cl.CommitRecords(context.WithoutCancel(ctx), recs...)
		if err == nil {
			return
		}
		w.s.log.Warn("consumer: Kafka commit failed", "try", try, "err", err)
		if try == 10 || !pause.For(ctx, kafkaRetry) {
			return
		}
	}
}
