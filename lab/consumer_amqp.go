package lab

import (
	"context"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemcheck/idemcheck/internal/pause"
)

// The RabbitMQ side of the lab's consumers: a durable queue each, read
// with manual acknowledgements, charged as the Redis consumers do. A
// message delivered on a channel that closes before its acknowledgement
// (a cut connection) is handed out again by the broker, flagged
// redelivered.
const (
	// AMQPQueue is the protected consumer's queue; AMQPNaiveQueue the
	// naive one's.
	AMQPQueue, AMQPNaiveQueue = "lab.charges", "lab.charges.naive"
	// amqpPrefetch is how many unacknowledged messages a consumer holds.
	amqpPrefetch = 16
	// amqpRetryWait is how long a message whose charge failed waits
	// before it is handed back to the broker.
	amqpRetryWait = 500 * time.Millisecond
)

// startAMQPConsumers starts the consumers on the RabbitMQ at url: each
// connects (again after its connection is cut), declares its queue and
// consumes it, until Stop.
func (s *Server) startAMQPConsumers(ctx context.Context, url, namespace, name string) (*Consumers, error) {
	if _, err := amqp.ParseURI(url); err != nil {
		return nil, &ConfigError{Field: "consumer", Value: redact(url), Problem: badConsumerURL}
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Consumers{cancel: cancel, close: func() {}}
	for _, naive := range []bool{false, true} {
		queue := AMQPQueue
		if naive {
			queue = AMQPNaiveQueue
		}
		if namespace != "" {
			queue = namespace + "." + queue
		}
		w := &amqpConsumer{s: s, url: url, queue: queue, naive: naive, name: fmt.Sprintf("%s-%s", name, queue)}
		c.wg.Add(1)
		go func() { defer c.wg.Done(); w.run(cctx) }()
	}
	return c, nil
}

// amqpConsumer consumes one queue over connections of its own.
type amqpConsumer struct {
	s     *Server
	url   string
	queue string
	naive bool
	name  string
	gen   int // connections made: a delivery tag is a channel's own
}

// run connects and consumes until ctx ends, connecting again after a
// connection is lost.
func (w *amqpConsumer) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := w.session(ctx)
		if ctx.Err() != nil {
			return
		}
		w.s.log.Warn("consumer: RabbitMQ connection lost, connecting again", "queue", w.queue, "err", err)
		pause.For(ctx, 100*time.Millisecond)
	}
}

// session is one connection: it declares the queue, consumes it with
// consumerWorkers workers, and returns once the connection closes (or
// ctx ends).
func (w *amqpConsumer) session(ctx context.Context) error {
	conn, err := amqp.DialConfig(w.url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second), Properties: amqp.Table{"connection_name": w.name}})
	if err != nil {
		return err
	}
	ch, err := conn.Channel()
	if err == nil {
		_, err = ch.QueueDeclare(w.queue, true, false, false, false, nil)
	}
	if err == nil {
		err = ch.Qos(amqpPrefetch, 0, false)
	}
	var deliveries <-chan amqp.Delivery
	if err == nil {
		deliveries, err = ch.Consume(w.queue, w.name, false, false, false, false, nil)
	}
	if err != nil {
		conn.Close()
		return err
	}
	w.gen++
	gen := w.gen
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	var wg sync.WaitGroup
	for range consumerWorkers {
		wg.Go(func() {
			for d := range deliveries {
				w.handle(ctx, d, gen)
			}
		})
	}
	// the deliveries also end alone, on a channel closed or a consumer
	// cancelled by the broker (a queue deleted, a consumer timeout)
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case cerr := <-closed:
		err = fmt.Errorf("connection closed: %v", cerr)
	case <-ended:
		err = fmt.Errorf("the broker ended the deliveries of queue %s", w.queue)
	}
	// the deliveries end with the connection: the workers finish the
	// charges they hold (their acknowledgements then fail, and the broker
	// hands those messages out again)
	conn.Close()
	wg.Wait()
	return err
}

// handle charges one delivery (consume) and acknowledges it; a failed
// charge is handed back after amqpRetryWait.
func (w *amqpConsumer) handle(ctx context.Context, d amqp.Delivery, gen int) {
	tag := fmt.Sprintf("delivery:%d.%d", gen, d.DeliveryTag) // new on every delivery
	ack := func() error { return d.Ack(false) }
	switch {
	case w.s.consume(ctx, d.MessageId, d.Body, tag, w.naive, ack):
		if err := d.Ack(false); err != nil {
			w.s.log.Warn("consumer: ack failed", "queue", w.queue, "err", err)
		}
	case !w.s.bugs[BugConsumerAckBeforeEffect] || w.naive:
		pause.For(ctx, amqpRetryWait)
		_ = d.Nack(false, true)
	}
}
