package lab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/internal/pause"
)

// The lab's queue consumers read payment messages from Redis streams and
// charge each, as a payment service's worker would: the protected
// consumer deduplicates by message id in the same transaction as the
// charge (the key record, as the protected endpoint's), then acknowledges
// (XACK); the naive consumer charges every message it is handed, then
// acknowledges. A message whose charge failed is left unacknowledged: a
// consumer claims it again once it has been idle ConsumerClaimIdle
// (XAUTOCLAIM), as a crashed or cut-off consumer's messages are.
const (
	// ConsumerStream is the protected consumer's stream.
	ConsumerStream = "lab:charges"
	// NaiveConsumerStream is the naive consumer's stream.
	NaiveConsumerStream = "lab:charges:naive"
	// ConsumerGroup is the consumers' group on both streams.
	ConsumerGroup = "lab"
	// ConsumerIDField and ConsumerBodyField are the entry's fields: the
	// message id, and the charge ({"amount":100,"currency":"usd"}).
	ConsumerIDField, ConsumerBodyField = "message_id", "body"
	// ConsumerPrincipal owns the consumers' charges: their keys are the
	// messages' ids, scoped apart from the API's users.
	ConsumerPrincipal = "consumer"
	// ConsumerClaimIdle is how long a delivered, unacknowledged message
	// waits before a consumer claims it again.
	ConsumerClaimIdle = 500 * time.Millisecond
	// consumerWorkers is how many consumers each lab runs per stream.
	consumerWorkers = 4
)

// Consumers are a lab's running queue consumers.
type Consumers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	close  func() // the broker connection
}

// StartConsumers starts the lab's consumers on the broker at url: the
// streams of a Redis (their names prefixed with namespace and ":" when it
// is set), or a NATS server's subjects, a RabbitMQ's queues, a Kafka
// cluster's topics (startNATSConsumers, startAMQPConsumers,
// startKafkaConsumers), creating them and their group when need be; name
// tells this lab's consumers from another's in the group. Stop ends them.
func (s *Server) StartConsumers(ctx context.Context, url, namespace, name string) (*Consumers, error) {
	if strings.HasPrefix(url, "nats://") || strings.HasPrefix(url, "tls://") {
		return s.startNATSConsumers(ctx, url, namespace, name)
	}
	if strings.HasPrefix(url, "amqp://") || strings.HasPrefix(url, "amqps://") {
		return s.startAMQPConsumers(ctx, url, namespace, name)
	}
	if strings.HasPrefix(url, "kafka://") {
		return s.startKafkaConsumers(ctx, url, namespace, name)
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, &ConfigError{Field: "consumer", Value: redact(url), Problem: badConsumerURL}
	}
	// A command cut off is not sent again behind the consumer's back (an
	// acknowledgement lost is the broker's to redeliver), as a consumer
	// that acknowledges once does.
	opt.MaxRetries = -1
	client := redis.NewClient(opt)
	prefix := ""
	if namespace != "" {
		prefix = namespace + ":"
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Consumers{cancel: cancel, close: func() { client.Close() }}
	for _, naive := range []bool{false, true} {
		stream := prefix + ConsumerStream
		if naive {
			stream = prefix + NaiveConsumerStream
		}
		// A broker not up yet (or a proxy in front of it not yet
		// listening) is waited for: the workers create the group when
		// they first reach it.
		if err := ensureGroup(ctx, client, stream); err != nil {
			s.log.Warn("consumer: waiting for the broker", "stream", stream, "err", err)
		}
		for i := range consumerWorkers {
			w := &consumer{s: s, client: client, stream: stream, naive: naive, name: fmt.Sprintf("%s-%d", name, i)}
			c.wg.Add(2)
			go func() { defer c.wg.Done(); w.read(cctx) }()
			go func() { defer c.wg.Done(); w.claim(cctx) }()
		}
	}
	return c, nil
}

// ensureGroup creates the consumers' group on stream (and the stream),
// from its start: messages published before the group existed are
// consumed too.
func ensureGroup(ctx context.Context, client *redis.Client, stream string) error {
	err := client.XGroupCreateMkStream(ctx, stream, ConsumerGroup, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return err
	}
	return nil
}

// badConsumerURL is the problem with a consumer URL a client cannot use:
// its own error quotes the URL, password and all, so it is not repeated
// (as ledgerURL and storeURL do).
const badConsumerURL = "not a redis://, nats://, amqp:// or kafka:// URL that can be parsed: check its form, escaping special characters in the password with %XX"

// Stop ends the consumers: a message being charged is charged first.
func (c *Consumers) Stop() {
	c.cancel()
	c.wg.Wait()
	c.close()
}

// consumer is one worker of a consumer group.
type consumer struct {
	s      *Server
	client *redis.Client
	stream string
	naive  bool
	name   string
}

// read takes new messages and handles them until ctx ends.
func (w *consumer) read(ctx context.Context) {
	for ctx.Err() == nil {
		res, err := w.client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: ConsumerGroup, Consumer: w.name,
			Streams: []string{w.stream, ">"}, Count: 16, Block: 200 * time.Millisecond}).Result()
		if err != nil {
			if !errors.Is(err, redis.Nil) && ctx.Err() == nil {
				if strings.Contains(err.Error(), "NOGROUP") {
					err = ensureGroup(ctx, w.client, w.stream)
				}
				if err != nil {
					w.s.log.Warn("consumer: read failed", "stream", w.stream, "err", err)
					pause.For(ctx, 100*time.Millisecond)
				}
			}
			continue
		}
		// a batch's messages are charged at once, as a worker pool does
		var wg sync.WaitGroup
		for _, st := range res {
			for _, m := range st.Messages {
				wg.Add(1)
				go func() { defer wg.Done(); w.handle(ctx, m) }()
			}
		}
		wg.Wait()
	}
}

// claim takes the messages another delivery left unacknowledged for
// ConsumerClaimIdle (a failed charge, a consumer cut off) and handles
// them again: the broker's redelivery.
func (w *consumer) claim(ctx context.Context) {
	for pause.For(ctx, ConsumerClaimIdle/2) {
		msgs, _, err := w.client.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: w.stream, Group: ConsumerGroup, Consumer: w.name,
			MinIdle: ConsumerClaimIdle, Start: "0-0", Count: 16}).Result()
		if err != nil {
			continue
		}
		for _, m := range msgs {
			w.handle(ctx, m)
		}
	}
}

// handle charges one message and acknowledges it (consume), unless its
// charge failed: it is then claimed again.
func (w *consumer) handle(ctx context.Context, m redis.XMessage) {
	id, _ := m.Values[ConsumerIDField].(string)
	body, _ := m.Values[ConsumerBodyField].(string)
	ack := func() error { return w.client.XAck(context.WithoutCancel(ctx), w.stream, ConsumerGroup, m.ID).Err() }
	if w.s.consume(ctx, id, []byte(body), "entry:"+m.ID, w.naive, ack) {
		w.ack(ctx, m.ID)
	}
}

// consume charges one message, whatever its broker: id is its message id,
// tag the broker's name for this delivery (new on every delivery or
// publish), ack acknowledges it. It reports whether the message is done
// with and must be acknowledged now: false when its charge failed (the
// broker hands it out again) or when it was acknowledged already. A
// message that can never be charged (no id, an invalid body) is done
// with, and logged: a poison message is not redelivered forever.
func (s *Server) consume(ctx context.Context, id string, body []byte, tag string, naive bool, ack func() error) bool {
	req, fp, err := decodeChargeBody(body, false)
	if err == nil {
		err = storableText("message id", id)
	}
	if err == nil && id == "" {
		err = errors.New("no message id")
	}
	if err != nil {
		if s.bugs[BugConsumerPoisonRetried] {
			s.log.Warn("seeded bug: a message that cannot be charged handed back", "bug", BugConsumerPoisonRetried, "delivery", tag, "err", err)
			return false
		}
		s.log.Warn("consumer: message dropped", "delivery", tag, "err", err)
		return true
	}
	cctx := context.WithoutCancel(ctx)
	op := s.newChargeOp(ConsumerPrincipal, id, req, fp)
	rec := &statusRecorder{header: http.Header{}}
	switch {
	case naive:
		s.chargeOnce(cctx, rec, op)
	case s.bugs[BugConsumerAckBeforeEffect]:
		// acknowledged first; an acknowledgement whose answer was lost is
		// taken for one that failed, and the message for one the broker
		// will hand out again: it may have taken the ack
		if err := ack(); err != nil {
			s.log.Warn("seeded bug: a message left uncharged after its acknowledgement failed", "bug", BugConsumerAckBeforeEffect, "err", err)
			return false
		}
		s.chargeProtected(cctx, rec, op)
		return false
	case s.bugs[BugConsumerDedupByDeliveryTag]:
		// the charge keeps the message id; the record it is deduplicated
		// under is the delivery's tag
		op.id.Key, op.forward = tag, false
		op.ck = cacheKey(op.id)
		s.chargeProtected(cctx, rec, op)
	case s.bugs[BugConsumerDedupAfterEffect]:
		s.chargeCheckThenAct(cctx, rec, op)
	default:
		s.chargeProtected(cctx, rec, op)
	}
	return rec.status < 500 && rec.status != http.StatusConflict
}

func (w *consumer) ack(ctx context.Context, id string) {
	if err := w.client.XAck(context.WithoutCancel(ctx), w.stream, ConsumerGroup, id).Err(); err != nil {
		w.s.log.Warn("consumer: ack failed", "stream", w.stream, "entry", id, "err", err)
	}
}
