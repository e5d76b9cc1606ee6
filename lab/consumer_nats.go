package lab

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemcheck/idemcheck/internal/pause"
)

// The NATS JetStream side of the lab's consumers: a stream takes the two
// subjects, and a durable pull consumer on each charges its messages as
// the Redis consumers do. A message left unacknowledged for
// NATSAckWait is redelivered by the server.
const (
	// NATSStream is the JetStream stream that takes both subjects.
	NATSStream = "LAB_CHARGES"
	// NATSSubject is the protected consumer's subject; NATSNaiveSubject
	// the naive one's.
	NATSSubject, NATSNaiveSubject = "lab.charges", "lab.charges.naive"
	// NATSIDHeader is the header that carries the message id.
	NATSIDHeader = "Message-Id"
	// NATSAckWait is how long a delivered message waits for its
	// acknowledgement before the server hands it out again.
	NATSAckWait = time.Second
)

// startNATSConsumers starts the consumers on the NATS server at url:
// they create the stream and their durable consumers once the server
// answers (a proxy in front of it may not listen yet), then fetch.
func (s *Server) startNATSConsumers(ctx context.Context, url, namespace, name string) (*Consumers, error) {
	// An acknowledgement is sent once: none is buffered across a
	// reconnection to be flushed later (the server redelivers what was
	// not acknowledged).
	nc, err := nats.Connect(url, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.ReconnectBufSize(-1), nats.Name("idemcheck-lab-"+name),
		// its asynchronous errors go to the lab's log, never to stderr
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { s.log.Warn("consumer: NATS", "err", err) }))
	if err != nil {
		return nil, &ConfigError{Field: "consumer", Value: redact(url), Problem: badConsumerURL}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, &ConfigError{Field: "consumer", Value: redact(url), Problem: err.Error()} // names no URL
	}
	stream, subject, naiveSubject := NATSStream, NATSSubject, NATSNaiveSubject
	if namespace != "" {
		stream = strings.ToUpper(namespace) + "_" + stream
		subject, naiveSubject = namespace+"."+subject, namespace+"."+naiveSubject
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Consumers{cancel: cancel, close: nc.Close}
	for _, naive := range []bool{false, true} {
		subj, durable := subject, "lab"
		if naive {
			subj, durable = naiveSubject, "lab-naive"
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			cons := s.natsConsumer(cctx, js, stream, []string{subject, naiveSubject}, subj, durable)
			if cons == nil {
				return
			}
			var wg sync.WaitGroup
			for i := range consumerWorkers {
				w := &natsWorker{s: s, cons: cons, naive: naive, name: fmt.Sprintf("%s-%s-%d", name, durable, i)}
				wg.Add(1)
				go func() { defer wg.Done(); w.read(cctx) }()
			}
			wg.Wait()
		}()
	}
	return c, nil
}

// natsConsumer creates the stream and the durable consumer on subject,
// trying again until the server answers or ctx ends (nil then).
func (s *Server) natsConsumer(ctx context.Context, js jetstream.JetStream, stream string, subjects []string, subject, durable string) jetstream.Consumer {
	for {
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: subjects, Duplicates: 2 * time.Minute})
		if err == nil {
			var cons jetstream.Consumer
			cons, err = js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: durable, FilterSubject: subject,
				AckPolicy: jetstream.AckExplicitPolicy, AckWait: NATSAckWait, MaxAckPending: 1000, DeliverPolicy: jetstream.DeliverAllPolicy})
			if err == nil {
				return cons
			}
		}
		s.log.Warn("consumer: waiting for the NATS server", "stream", stream, "err", err)
		if !pause.For(ctx, 200*time.Millisecond) {
			return nil
		}
	}
}

// natsWorker is one worker of a durable pull consumer.
type natsWorker struct {
	s     *Server
	cons  jetstream.Consumer
	naive bool
	name  string
}

// read fetches messages and charges each batch at once, until ctx ends.
func (w *natsWorker) read(ctx context.Context) {
	for ctx.Err() == nil {
		batch, err := w.cons.Fetch(16, jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			if ctx.Err() == nil {
				pause.For(ctx, 100*time.Millisecond)
			}
			continue
		}
		var wg sync.WaitGroup
		for m := range batch.Messages() {
			wg.Add(1)
			go func() { defer wg.Done(); w.handle(ctx, m) }()
		}
		wg.Wait()
	}
}

// handle charges one message (consume) and acknowledges it; a failed
// charge is handed out again after NATSAckWait (a negative
// acknowledgement with that delay).
func (w *natsWorker) handle(ctx context.Context, m jetstream.Msg) {
	tag := "delivery:unknown"
	if meta, err := m.Metadata(); err == nil {
		tag = fmt.Sprintf("delivery:%d", meta.Sequence.Consumer) // new on every delivery
	}
	ack := func() error { return m.DoubleAck(context.WithoutCancel(ctx)) }
	id := m.Headers().Get(NATSIDHeader)
	if id == "" {
		id = m.Headers().Get(jetstream.MsgIDHeader) // a producer that leaves the dedup to JetStream's window
	}
	if w.s.consume(ctx, id, m.Data(), tag, w.naive, ack) {
		_ = m.Ack()
	} else if !w.s.bugs[BugConsumerAckBeforeEffect] || w.naive {
		_ = m.NakWithDelay(NATSAckWait)
	}
}
