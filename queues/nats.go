package queues

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/hint"
	"github.com/idemcheck/idemcheck/internal/pause"
	"github.com/idemcheck/idemcheck/scenarios"
)

// NATS publishes each attempt to a NATS JetStream subject: the message id
// in a header (operation.publish.id_header), the rendered body as its
// data. JetStream's publish acknowledgement is the broker's confirm. A
// stream must take the subject (the consumer's side creates it).
type NATS struct {
	url      string
	subject  string
	idHeader string
	body     *scenarios.Text
	broker   string // host:port, for messages

	mu sync.Mutex
	nc *nats.Conn
	js jetstream.JetStream

	stored  atomic.Int64      // messages JetStream stored since Mark
	marked  map[string]uint64 // each consumer's deliveries at Mark
	markErr error             // why Mark could not read them
}

// NewNATS is the publisher of sc (operation.publish.subject) to the NATS
// server at broker; env is what the body's template reads. It connects
// nothing: Ping does.
func NewNATS(sc *scenarios.Scenario, broker *url.URL, env func(string) string) (*NATS, error) {
	p := sc.Operation.Publish
	if p == nil || p.Subject == "" {
		return nil, errors.New("the scenario publishes to no NATS subject (operation.publish.subject)")
	}
	body, err := scenarios.NewText("operation.body", sc.Operation.Body, env)
	if err != nil {
		return nil, err
	}
	return &NATS{url: broker.String(), subject: p.Subject, idHeader: p.IDHeader, body: body, broker: broker.Host}, nil
}

// conn is the connection, made on first use.
func (p *NATS) conn() (jetstream.JetStream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.js != nil {
		return p.js, nil
	}
	nc, err := nats.Connect(p.url, nats.Timeout(5*time.Second), nats.Name("idemcheck"),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})) // a library prints nothing: a publish's error is its attempt's
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	p.nc, p.js = nc, js
	return js, nil
}

// Close closes the connection.
func (p *NATS) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nc != nil {
		p.nc.Close()
	}
	return nil
}

// streamWait is how long Ping waits for a stream to take the subject.
const streamWait = 5 * time.Second

// Ping checks that the server answers and that a JetStream stream takes
// the subject (waiting up to streamWait for one).
func (p *NATS) Ping(ctx context.Context) error {
	js, err := p.conn()
	if err != nil {
		return hint.New("is nats-server running (with JetStream: -js) at "+p.broker+", and the URL right? e.g. --target nats://127.0.0.1:4222",
			fmt.Errorf("broker %s unreachable: %w", p.broker, err))
	}
	// a consumer starting may be what creates the stream: wait for it a while
	deadline := time.Now().Add(streamWait)
	_, err = js.StreamNameBySubject(ctx, p.subject)
	for err != nil && time.Now().Before(deadline) && pause.For(ctx, 100*time.Millisecond) {
		_, err = js.StreamNameBySubject(ctx, p.subject)
	}
	if err != nil {
		return hint.New("create the stream that takes the subject first (the consumer's side does: idemcheck lab --consumer nats://…)",
			fmt.Errorf("broker %s: no JetStream stream takes subject %s: %w", p.broker, p.subject, err))
	}
	return nil
}

// RecordsBit reports that Send says whether each fault bit.
func (p *NATS) RecordsBit() bool { return true }

// Send publishes one attempt and waits for JetStream's acknowledgement.
// A duplicate fault publishes Copies copies at once (it bit when two or
// more were stored: a Nats-Msg-Id header makes JetStream drop the rest);
// drop_ack publishes it and loses the acknowledgement (outcome info; it
// bit when the message was stored); delay waits first.
func (p *NATS) Send(ctx context.Context, v scenarios.Vars, f faults.Fault, a *history.Attempt, now func() time.Duration) error {
	body, js, copies, err := publishing(ctx, p.body, v, f, a, now, p.conn)
	if err != nil || copies == 0 {
		return err
	}
	defer func() { a.End = now() }()
	var mu sync.Mutex
	var wg sync.WaitGroup
	stored, acked := 0, 0
	var errs []error
	for range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := nats.NewMsg(p.subject)
			m.Header.Set(p.idHeader, v.Key)
			m.Data = []byte(body)
			ack, err := js.PublishMsg(ctx, m)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			acked++
			if !ack.Duplicate {
				stored++
				p.stored.Add(1)
			}
		}()
	}
	wg.Wait()
	switch {
	case acked == 0:
		a.Outcome, a.Err = history.Info, "not confirmed: "+errs[0].Error() // it may have been stored
		if errors.Is(errs[0], nats.ErrNoResponders) || errors.Is(errs[0], jetstream.ErrNoStreamResponse) {
			a.Outcome = history.Fail // no stream took it
		}
		return nil
	case acked < copies:
		a.Outcome, a.Status, a.Err = history.OK, ConfirmedStatus, fmt.Sprintf("%d of %d copies confirmed: %v", acked, copies, errs[0])
	default:
		a.Outcome, a.Status = history.OK, ConfirmedStatus
	}
	if stored == 0 && acked == copies {
		a.Status = DuplicateStatus // every copy dropped as a duplicate
	}
	afterPublish(f, a, stored)
	return nil
}

// consumers lists the consumers of the stream that takes the subject.
func (p *NATS) consumers(ctx context.Context) (string, []*jetstream.ConsumerInfo, error) {
	js, err := p.conn()
	if err != nil {
		return "", nil, err
	}
	name, err := js.StreamNameBySubject(ctx, p.subject)
	if err != nil {
		return "", nil, fmt.Errorf("the stream of subject %s: %w", p.subject, err)
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return name, nil, err
	}
	var out []*jetstream.ConsumerInfo
	l := s.ListConsumers(ctx)
	for ci := range l.Info() {
		out = append(out, ci)
	}
	return name, out, l.Err()
}

// Drained reports whether every consumer of the subject's stream has had
// every message delivered and acknowledged.
func (p *NATS) Drained(ctx context.Context) (bool, string, error) {
	name, cs, err := p.consumers(ctx)
	if err != nil {
		return false, "", err
	}
	if len(cs) == 0 {
		return false, fmt.Sprintf("no consumer reads stream %s: is the consumer running?", name), nil
	}
	var left []string
	for _, c := range cs {
		if c.NumPending > 0 || c.NumAckPending > 0 {
			left = append(left, fmt.Sprintf("consumer %s: %d not yet delivered, %d delivered and not acknowledged", c.Name, c.NumPending, c.NumAckPending))
		}
	}
	if len(left) > 0 {
		return false, fmt.Sprint(left), nil
	}
	return true, "", nil
}

// Delivered reports whether every consumer was handed every message once.
func (p *NATS) Delivered(ctx context.Context) (bool, error) {
	_, cs, err := p.consumers(ctx)
	if err != nil || len(cs) == 0 {
		return false, err
	}
	for _, c := range cs {
		if c.NumPending > 0 {
			return false, nil
		}
	}
	return true, nil
}

// Mark notes how many deliveries each consumer of the subject has made:
// Redelivered counts this run's from there.
func (p *NATS) Mark(ctx context.Context) {
	_, cs, err := p.consumers(ctx)
	p.mu.Lock()
	p.markErr = err
	p.mu.Unlock()
	if err != nil {
		return
	}
	m := map[string]uint64{}
	for _, c := range cs {
		if p.reads(c) {
			m[c.Name] = c.Delivered.Consumer
		}
	}
	p.mu.Lock()
	p.marked = m
	p.mu.Unlock()
	p.stored.Store(0)
}

// reads reports whether consumer c is handed the subject's messages.
func (p *NATS) reads(c *jetstream.ConsumerInfo) bool {
	f := c.Config.FilterSubject
	return (f == "" && len(c.Config.FilterSubjects) == 0) || f == p.subject || slices.Contains(c.Config.FilterSubjects, p.subject)
}

// Redelivered counts the deliveries beyond one per message since Mark:
// every consumer that reads the subject numbers each delivery it makes
// (its consumer sequence, a redelivery included), so what it delivered
// since Mark beyond the messages stored is redelivered. They are named
// "redelivery#k", one per redelivery seen.
func (p *NATS) Redelivered(ctx context.Context) ([]string, error) {
	_, cs, err := p.consumers(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	marked, markErr := p.marked, p.markErr
	p.mu.Unlock()
	if markErr != nil || marked == nil {
		// counting from zero would count earlier runs' deliveries
		return nil, fmt.Errorf("the consumers' deliveries could not be read before the load: %v", markErr)
	}
	stored := p.stored.Load()
	var out []string
	for _, c := range cs {
		if !p.reads(c) {
			continue
		}
		extra := int64(c.Delivered.Consumer-marked[c.Name]) - stored
		for k := int64(0); k < extra; k++ {
			out = append(out, fmt.Sprintf("%s redelivery#%d", c.Name, k))
		}
	}
	return out, nil
}
