package queues

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/hint"
	"github.com/idemcheck/idemcheck/internal/pause"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Kafka produces each attempt to a Kafka topic: the message id is the
// record's key (so every copy of a message lands on one partition, as a
// keyed producer's do), and in a header too when id_header is set; the
// rendered body is its value. The produce acknowledgement (acks=all) is
// the broker's confirm. Whether the consumer drained the topic is read
// from its consumer group's committed offsets.
type Kafka struct {
	topic    string
	group    string
	idHeader string
	body     *scenarios.Text
	broker   string // host:port, the seed broker
	opts     []kgo.Opt
	askWait  time.Duration // kafkaAskWait; shorter in tests
	waitFor  time.Duration // how long Ping waits for the topic: streamWait

	mu sync.Mutex
	cl *kgo.Client
}

// KafkaDeliveryTimeout bounds how long a record may wait for its
// acknowledgement, the client's own resends included: a publish is never
// left waiting on a broker that stopped answering, and neither is a
// publish whose context ended (Ctrl-C, the run's deadline).
const KafkaDeliveryTimeout = 10 * time.Second

// kafkaAskWait bounds each question Drained asks the cluster (end
// offsets, committed offsets, the group's members): the drain is polled,
// so a cluster that stopped answering is asked again, not waited on.
const kafkaAskWait = 5 * time.Second

// NewKafka is the producer of sc (operation.publish.topic) to the Kafka
// cluster whose seed broker is broker (a user and password in the URL
// authenticate with SASL/PLAIN); env is what the body's template reads.
// It connects nothing: Ping does.
func NewKafka(sc *scenarios.Scenario, broker *url.URL, env func(string) string) (*Kafka, error) {
	p := sc.Operation.Publish
	if p == nil || p.Topic == "" || p.Group == "" {
		return nil, errors.New("the scenario produces to no Kafka topic, or names no consumer group (operation.publish.topic, group)")
	}
	body, err := scenarios.NewText("operation.body", sc.Operation.Body, env)
	if err != nil {
		return nil, err
	}
	addr := broker.Host
	if broker.Port() == "" {
		addr = net.JoinHostPort(broker.Hostname(), "9092")
	}
	return &Kafka{topic: p.Topic, group: p.Group, idHeader: p.IDHeader, body: body, broker: addr,
		opts: KafkaOpts(broker, addr), askWait: kafkaAskWait, waitFor: streamWait}, nil
}

// KafkaOpts are the client options every idemcheck Kafka client takes:
// the seed broker addr, SASL/PLAIN with the URL's user and password,
// bounded dials and retries. The producer is franz-go's idempotent one:
// the client resends a produce request whose answer it lost, and the
// broker drops the copy by its sequence number, so the client's own
// resends never append twice; what the runner sends again is a new
// record, recorded. A record in flight may be given up (Ctrl-C, the
// delivery timeout): it ends as not confirmed, and the runner's retry
// may append a second copy, as a real producer's would.
// UnknownTopicRetries(-1) keeps a topic that vanished mid-run from
// failing a record the broker may have taken: until the delivery
// timeout, the client asks again.
func KafkaOpts(u *url.URL, addr string) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(5 * time.Second), kgo.RetryTimeout(5 * time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond), kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(KafkaDeliveryTimeout), kgo.AllowIdempotentProduceCancellation(),
		kgo.UnknownTopicRetries(-1), kgo.ClientID("idemcheck")}
	if u.User != nil {
		pass, _ := u.User.Password()
		opts = append(opts, kgo.SASL(plain.Auth{User: u.User.Username(), Pass: pass}.AsMechanism()))
	}
	return opts
}

// client is the Kafka client, made on first use.
func (p *Kafka) client() (*kgo.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cl != nil {
		return p.cl, nil
	}
	cl, err := kgo.NewClient(p.opts...)
	if err != nil {
		return nil, err
	}
	p.cl = cl
	return cl, nil
}

// Close closes the client.
func (p *Kafka) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cl != nil {
		p.cl.Close()
	}
	return nil
}

// Ping checks that the cluster answers and that the topic exists
// (waiting up to streamWait for it: the consumer's side may create it).
func (p *Kafka) Ping(ctx context.Context) error {
	cl, err := p.client()
	if err != nil {
		return fmt.Errorf("broker %s: %w", p.broker, err)
	}
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, p.waitFor+5*time.Second)
	defer cancel()
	if _, err := adm.BrokerMetadata(ctx); err != nil {
		return hint.New("is Kafka running at "+p.broker+", and the URL right? e.g. --target kafka://127.0.0.1:9092",
			fmt.Errorf("broker %s unreachable: %w", p.broker, err))
	}
	deadline := time.Now().Add(p.waitFor)
	for {
		err := p.topicExists(ctx, adm)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || !pause.For(ctx, 100*time.Millisecond) {
			return hint.New("create the topic first (the consumer's side does: idemcheck lab --consumer kafka://…), or check its name",
				fmt.Errorf("broker %s: %w", p.broker, err))
		}
	}
}

// topicExists reports why the topic cannot be produced to, nil when it
// can.
func (p *Kafka) topicExists(ctx context.Context, adm *kadm.Client) error {
	td, err := adm.ListTopics(ctx, p.topic)
	if err != nil {
		return err
	}
	t, ok := td[p.topic]
	switch {
	case !ok || errors.Is(t.Err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("no topic %s", p.topic)
	case t.Err != nil:
		return fmt.Errorf("topic %s: %w", p.topic, t.Err)
	}
	return nil
}

// RecordsBit reports that Send says whether each fault bit.
func (p *Kafka) RecordsBit() bool { return true }

// notProduced are the errors of a record the broker certainly did not
// append: the record is too large to take (the client checks before it
// writes), the broker refused it whole, or the producer may not write.
// Anything else (a lost answer, a timeout, a corrupt message the client
// resent, a topic gone mid-run) may follow an earlier try the broker
// appended: not confirmed, never certainly not published.
var notProduced = []error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord,
	kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed, kerr.InvalidTopicException}

// Send produces one attempt and waits for its acknowledgement. A
// duplicate fault produces Copies records at once (it bit when two or
// more were appended: Kafka keeps every one); drop_ack produces it and
// loses the acknowledgement (outcome info; it bit when the record was
// appended); delay waits first.
func (p *Kafka) Send(ctx context.Context, v scenarios.Vars, f faults.Fault, a *history.Attempt, now func() time.Duration) error {
	body, cl, copies, err := publishing(ctx, p.body, v, f, a, now, p.client)
	if err != nil || copies == 0 {
		return err
	}
	defer func() { a.End = now() }()
	recs := make([]*kgo.Record, copies)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: p.topic, Key: []byte(v.Key), Value: []byte(body)}
		if p.idHeader != "" {
			recs[i].Headers = []kgo.RecordHeader{{Key: p.idHeader, Value: []byte(v.Key)}}
		}
	}
	res := cl.ProduceSync(ctx, recs...)
	acked, certain := 0, true
	var first error
	for _, r := range res {
		if r.Err == nil {
			acked++
			continue
		}
		if first == nil {
			first = r.Err
		}
		if !isNotProduced(r.Err) {
			certain = false
		}
	}
	switch {
	case acked == 0 && certain:
		a.Outcome, a.Err = history.Fail, "not published: "+first.Error()
		return nil
	case acked == 0:
		a.Outcome, a.Err = history.Info, "not confirmed: "+first.Error() // it may have been appended
		return nil
	case acked < copies:
		a.Outcome, a.Status, a.Err = history.OK, ConfirmedStatus, fmt.Sprintf("%d of %d copies confirmed: %v", acked, copies, first)
	default:
		a.Outcome, a.Status = history.OK, ConfirmedStatus
	}
	afterPublish(f, a, acked)
	return nil
}

func isNotProduced(err error) bool {
	for _, e := range notProduced {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// lag is, per partition of the topic, how far the group's committed
// offset is behind the topic's end; none when it has caught up.
func (p *Kafka) lag(ctx context.Context) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, p.askWait)
	defer cancel()
	cl, err := p.client()
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, p.topic)
	if err != nil {
		return nil, fmt.Errorf("the end offsets of topic %s: %w", p.topic, err)
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("the end offsets of topic %s: %w", p.topic, err)
	}
	committed, err := adm.FetchOffsets(ctx, p.group)
	if err == nil {
		err = committed.Error()
	}
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		committed = nil // no member of the group has committed anything yet
	case err != nil:
		return nil, fmt.Errorf("the committed offsets of group %s: %w", p.group, err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		at := int64(0)
		if c, ok := committed.Lookup(p.topic, o.Partition); ok && c.At > 0 {
			at = c.At
		}
		if o.Offset > at {
			left[o.Partition] = o.Offset - at
		}
	})
	return left, nil
}

// Drained reports whether the group has committed every partition of the
// topic up to its end: every record produced was consumed and its
// consumer said it was done with it.
func (p *Kafka) Drained(ctx context.Context) (bool, string, error) {
	left, err := p.lag(ctx)
	if err != nil || len(left) == 0 {
		return err == nil, "", err
	}
	parts := make([]int32, 0, len(left))
	total := int64(0)
	for k, n := range left {
		parts = append(parts, k)
		total += n
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	why := fmt.Sprintf("group %s has %d records of topic %s to commit (partitions %v)", p.group, total, p.topic, parts)
	if cl, err := p.client(); err == nil {
		ctx, cancel := context.WithTimeout(ctx, p.askWait)
		defer cancel()
		if gs, err := kadm.NewClient(cl).DescribeGroups(ctx, p.group); err == nil {
			if g, ok := gs[p.group]; !ok || len(g.Members) == 0 {
				why += fmt.Sprintf("; no member is in group %s: is the consumer running?", p.group)
			}
		}
	}
	return false, why, nil
}

// Delivered reports what Drained does: a Kafka broker does not say how
// far a consumer has fetched, only what its group committed.
func (p *Kafka) Delivered(ctx context.Context) (bool, error) {
	ok, _, err := p.Drained(ctx)
	return ok, err
}

// Mark does nothing: Drained compares the group's committed offsets with
// the topic's end, which holds whatever earlier runs produced too, so a
// group that had not caught up before the run must catch up first. A
// group's commit is its consumer's word that it is done with a record:
// a consumer that commits before the effect (auto-commit does, on a
// timer) makes the drain read the oracles early, and the run then
// reports the effects it has not applied yet as missing.
func (p *Kafka) Mark(context.Context) {}

// Redelivered is refused: a Kafka broker does not count what it hands out
// again (a consumer group fetches again from its committed offset), so a
// consumer_cut, which needs the count, is refused on Kafka before a run.
func (p *Kafka) Redelivered(context.Context) ([]string, error) {
	return nil, errors.New("a Kafka broker does not count the records it hands out again")
}
