package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/hint"
	"github.com/idemcheck/idemcheck/internal/pause"
	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/scenarios"
)

// AMQP publishes each attempt to a RabbitMQ queue with publisher
// confirms: the message id in the message_id property (or the header
// operation.publish.id_header), the rendered body as a persistent
// message's, through the default exchange to the queue (or through
// operation.publish.exchange with its routing key). The broker's
// basic.ack is the confirm; a message no queue took (returned, as it is
// published mandatory) was certainly not published.
//
// AMQP tells a publisher nothing of a queue's unacknowledged messages or
// of its redeliveries: Drained, Delivered and Redelivered read them from
// RabbitMQ's management API (operation.publish.management).
type AMQP struct {
	url                  string
	exchange, routingKey string
	queue                string
	idHeader             string
	body                 *scenarios.Text
	broker               string // host:port, for messages
	vhost                string
	api                  *url.URL // the management API's base, with its credentials
	http                 *http.Client

	mu      sync.Mutex
	conn    *amqp.Connection
	ch      *amqp.Channel    // in confirm mode
	returns chan amqp.Return // the messages no queue took
	lost    map[string]int   // message ids returned, not yet seen by Send
	stored  atomic.Int64     // messages the queue took since Mark
	marked  *amqpQueueStats  // the queue's figures at Mark
	markErr error            // why Mark could not read them
}

// NewAMQP is the publisher of sc (operation.publish.queue) to the
// RabbitMQ at broker; env is what the body's template reads. It connects
// nothing: Ping does.
func NewAMQP(sc *scenarios.Scenario, broker *url.URL, env func(string) string) (*AMQP, error) {
	p := sc.Operation.Publish
	if p == nil || p.Queue == "" {
		return nil, errors.New("the scenario publishes to no RabbitMQ queue (operation.publish.queue)")
	}
	body, err := scenarios.NewText("operation.body", sc.Operation.Body, env)
	if err != nil {
		return nil, err
	}
	a := &AMQP{url: broker.String(), exchange: p.Exchange, routingKey: p.RoutingKey, queue: p.Queue, idHeader: p.IDHeader,
		body: body, broker: brokerHost(broker, map[bool]string{true: "5671", false: "5672"}[broker.Scheme == "amqps"]), http: &http.Client{Timeout: 10 * time.Second}}
	if a.exchange == "" {
		a.routingKey = a.queue // the default exchange routes by the queue's name
	}
	a.vhost = "/"
	if v := strings.TrimPrefix(broker.Path, "/"); v != "" {
		a.vhost = v
	}
	if a.api, err = managementURL(p.Management, broker); err != nil {
		return nil, err
	}
	return a, nil
}

// brokerHost is u's host:port, port def when it names none.
func brokerHost(u *url.URL, def string) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), def)
}

// managementURL is the management API's base URL: raw when it is set,
// else the broker's host on port 15672 (https on 15671 for amqps); the broker
// URL's user and password when raw gives none (RabbitMQ's guest, guest
// when neither does).
func managementURL(raw string, broker *url.URL) (*url.URL, error) {
	var u *url.URL
	if raw != "" {
		var err error
		if u, err = url.Parse(raw); err != nil || u.Host == "" {
			return nil, fmt.Errorf("operation.publish.management %q is not a URL", redact.String(raw))
		}
	} else {
		scheme, port := "http", "15672"
		if broker.Scheme == "amqps" {
			scheme, port = "https", "15671" // the management plugin's TLS port
		}
		u = &url.URL{Scheme: scheme, Host: net.JoinHostPort(broker.Hostname(), port)}
	}
	if u.User == nil {
		u.User = broker.User
	}
	if u.User == nil {
		u.User = url.UserPassword("guest", "guest")
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// channel is the confirm-mode channel, opened (with its connection) on
// first use and again after it closed.
func (p *AMQP) channel() (*amqp.Channel, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch != nil && !p.ch.IsClosed() {
		return p.ch, nil
	}
	if p.conn == nil || p.conn.IsClosed() {
		conn, err := amqp.DialConfig(p.url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second), Properties: amqp.Table{"connection_name": "idemcheck"}})
		if err != nil {
			return nil, err
		}
		p.conn = conn
	}
	ch, err := p.conn.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		ch.Close()
		return nil, err
	}
	p.ch = ch
	p.returns = ch.NotifyReturn(make(chan amqp.Return, 1024))
	return ch, nil
}

// returned reports whether a message with id was returned (no queue took
// it): the broker returns a message before it confirms it, so a return
// is on the channel by the time its confirm is seen.
func (p *AMQP) returned(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lost == nil {
		p.lost = map[string]int{}
	}
	for more := true; more; {
		select {
		case r, ok := <-p.returns:
			if !ok {
				more = false
				break
			}
			p.lost[returnedID(r, p.idHeader)]++
		default:
			more = false
		}
	}
	if p.lost[id] > 0 {
		p.lost[id]--
		return true
	}
	return false
}

// returnedID is the message id of a returned message.
func returnedID(r amqp.Return, header string) string {
	if header == "" {
		return r.MessageId
	}
	s, _ := r.Headers[header].(string)
	return s
}

// Close closes the connection.
func (p *AMQP) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		return p.conn.Close()
	}
	return nil
}

// Ping checks that the broker answers, that the queue exists (waiting
// up to streamWait for the consumer's side to declare it), and that the
// management API answers.
func (p *AMQP) Ping(ctx context.Context) error {
	if _, err := p.channel(); err != nil {
		return hint.New("is rabbitmq-server running at "+p.broker+", and the URL right (user, password, virtual host)? e.g. --target amqp://guest:guest@127.0.0.1:5672/",
			fmt.Errorf("broker %s unreachable: %w", p.broker, err))
	}
	deadline := time.Now().Add(streamWait)
	_, err := p.declared()
	for err != nil && time.Now().Before(deadline) && pause.For(ctx, 100*time.Millisecond) {
		_, err = p.declared()
	}
	if err != nil {
		return hint.New("declare the queue first (the consumer's side does: idemcheck lab --consumer amqp://…)",
			fmt.Errorf("broker %s: no queue %s in virtual host %s: %w", p.broker, p.queue, p.vhost, err))
	}
	if _, err := p.stats(ctx); err != nil {
		return hint.New("enable RabbitMQ's management API (rabbitmq-plugins enable rabbitmq_management), or give its URL: operation.publish.management: http://127.0.0.1:15672",
			fmt.Errorf("broker %s: whether the queue drains is read from the management API: %w", p.broker, err))
	}
	return nil
}

// declared checks that the queue exists, and returns its live figures
// (messages ready, consumers), on a channel of its own (a passive
// declaration of a missing queue closes its channel).
func (p *AMQP) declared() (amqp.Queue, error) {
	if _, err := p.channel(); err != nil {
		return amqp.Queue{}, err
	}
	p.mu.Lock()
	conn := p.conn
	p.mu.Unlock()
	ch, err := conn.Channel()
	if err != nil {
		return amqp.Queue{}, err
	}
	defer ch.Close()
	return ch.QueueDeclarePassive(p.queue, true, false, false, false, nil)
}

// RecordsBit reports that Send says whether each fault bit.
func (p *AMQP) RecordsBit() bool { return true }

// Send publishes one attempt and waits for the broker's confirm. A
// duplicate fault publishes Copies copies at once (it bit when two or
// more were taken: RabbitMQ deduplicates nothing); drop_ack publishes it
// and loses the confirm (outcome info; it bit when the queue took it);
// delay waits first.
func (p *AMQP) Send(ctx context.Context, v scenarios.Vars, f faults.Fault, a *history.Attempt, now func() time.Duration) error {
	body, ch, copies, err := publishing(ctx, p.body, v, f, a, now, p.channel)
	if err != nil || copies == 0 {
		return err
	}
	defer func() { a.End = now() }()
	msg := amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/json", Body: []byte(body)}
	if p.idHeader == "" {
		msg.MessageId = v.Key
	} else {
		msg.Headers = amqp.Table{p.idHeader: v.Key}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	stored, confirmed, unsent, lost := 0, 0, 0, 0
	var errs []error
	for range copies {
		wg.Go(func() {
			dc, gaveUp, err := publishBounded(ctx, func() (*amqp.DeferredConfirmation, error) {
				return ch.PublishWithDeferredConfirmWithContext(ctx, p.exchange, p.routingKey, true, false, msg)
			})
			var ok bool
			if err == nil {
				ok, err = dc.WaitContext(ctx)
				if err == nil && !ok {
					err = errors.New("the broker refused it (basic.nack)")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && dc == nil && !gaveUp:
				unsent++
				errs = append(errs, err)
			case err != nil:
				errs = append(errs, err)
			case p.returned(v.Key):
				lost++
			default:
				confirmed++
				stored++
				p.stored.Add(1)
			}
		})
	}
	wg.Wait()
	switch {
	case confirmed == 0 && lost > 0 && len(errs) == 0:
		a.Outcome, a.Err = history.Fail, fmt.Sprintf("not published: no queue took it (exchange %q, routing key %q): returned", p.exchange, p.routingKey)
		return nil
	case confirmed == 0 && unsent == copies:
		a.Outcome, a.Err = history.Fail, "not published: "+errs[0].Error()
		return nil
	case confirmed == 0:
		a.Outcome, a.Err = history.Info, "not confirmed: "+errs[0].Error() // it may have been taken
		return nil
	case confirmed < copies:
		a.Outcome, a.Status = history.OK, ConfirmedStatus
		if len(errs) > 0 {
			a.Err = fmt.Sprintf("%d of %d copies confirmed: %v", confirmed, copies, errs[0])
		} else {
			a.Err = fmt.Sprintf("%d of %d copies confirmed, the rest returned", confirmed, copies)
		}
	default:
		a.Outcome, a.Status = history.OK, ConfirmedStatus
	}
	afterPublish(f, a, stored)
	return nil
}

// publishBounded runs publish, and gives up on it when ctx ends first:
// amqp091-go writes a publish to the connection without a deadline,
// whatever its context, so a broker that stops reading (a resource alarm
// blocks its publishers) would hold the caller until the connection
// closes. gaveUp says the write may have reached the broker, or not: the
// publish is then not confirmed, never "not published". The write left
// behind ends when the connection is closed.
func publishBounded(ctx context.Context, publish func() (*amqp.DeferredConfirmation, error)) (dc *amqp.DeferredConfirmation, gaveUp bool, err error) {
	type result struct {
		dc  *amqp.DeferredConfirmation
		err error
	}
	done := make(chan result, 1)
	go func() {
		dc, err := publish()
		done <- result{dc, err}
	}()
	select {
	case r := <-done:
		return r.dc, false, r.err
	case <-ctx.Done():
		return nil, true, fmt.Errorf("the publish was not written to the broker before %w (is it blocking publishers? a resource alarm does)", context.Cause(ctx))
	}
}

// amqpQueueStats are the figures of a queue the management API gives.
type amqpQueueStats struct {
	Ready     int64 `json:"messages_ready"`
	Unacked   int64 `json:"messages_unacknowledged"`
	Consumers int64 `json:"consumers"`
	Stats     struct {
		Publish   int64 `json:"publish"`
		Ack       int64 `json:"ack"`
		Redeliver int64 `json:"redeliver"`
	} `json:"message_stats"`
}

// stats reads the queue's figures from the management API. They are
// sampled (every collect_statistics_interval, 5 s unless set): Drained
// trusts them only once they count every message the queue took.
func (p *AMQP) stats(ctx context.Context) (*amqpQueueStats, error) {
	base := *p.api
	base.User = nil // sent as a header: never in an error's URL
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		base.String()+"/api/queues/"+url.PathEscape(p.vhost)+"/"+url.PathEscape(p.queue), nil)
	if err != nil {
		return nil, err
	}
	pw, _ := p.api.User.Password()
	req.SetBasicAuth(p.api.User.Username(), pw)
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the management API at %s answered %d to GET /api/queues/…/%s", redact.URL(p.api), resp.StatusCode, p.queue)
	}
	var s amqpQueueStats
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("the management API at %s: %w", redact.URL(p.api), err)
	}
	return &s, nil
}

// sinceMark are the queue's figures now, and at Mark; an error when Mark
// could not read them (counting from zero would count earlier runs').
func (p *AMQP) sinceMark(ctx context.Context) (now, marked *amqpQueueStats, err error) {
	p.mu.Lock()
	marked, err = p.marked, p.markErr
	p.mu.Unlock()
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("the queue's figures could not be read before the load: %w", err)
	case marked == nil:
		return nil, nil, errors.New("the queue's figures were not read before the load")
	}
	now, err = p.stats(ctx)
	return now, marked, err
}

// Drained reports whether the consumer has acknowledged as many of the
// queue's messages since Mark as this run had confirmed, and the queue
// holds none, ready (read live) or unacknowledged. The management API's
// figures are sampled: a stale sample counts fewer acknowledgements,
// never more, so it can only make the drain wait.
func (p *AMQP) Drained(ctx context.Context) (bool, string, error) {
	s, marked, err := p.sinceMark(ctx)
	if err != nil {
		return false, "", err
	}
	q, err := p.declared()
	if err != nil {
		return false, "", err
	}
	acked, stored := s.Stats.Ack-marked.Stats.Ack, p.stored.Load()
	switch {
	case q.Consumers == 0:
		return false, fmt.Sprintf("no consumer reads queue %s: is the consumer running?", p.queue), nil
	case acked < stored:
		return false, fmt.Sprintf("queue %s: %d of the %d messages confirmed acknowledged by the consumer (the management API's figures)", p.queue, acked, stored), nil
	case q.Messages > 0 || s.Unacked > 0:
		return false, fmt.Sprintf("queue %s: %d not yet delivered, %d delivered and not acknowledged", p.queue, q.Messages, s.Unacked), nil
	}
	return true, "", nil
}

// Delivered reports whether every message was handed to a consumer: none
// is ready, read live.
func (p *AMQP) Delivered(ctx context.Context) (bool, error) {
	q, err := p.declared()
	if err != nil {
		return false, err
	}
	return q.Consumers > 0 && q.Messages == 0, nil
}

// Mark notes the queue's figures: Drained and Redelivered count from
// there.
func (p *AMQP) Mark(ctx context.Context) {
	s, err := p.stats(ctx)
	p.mu.Lock()
	p.marked, p.markErr = s, err
	p.mu.Unlock()
	p.stored.Store(0)
}

// Published notes n messages the queue took since Mark beside the ones
// Send published (another publisher's, such as the consumer battery's
// poison message): the drain waits for their acknowledgements too.
func (p *AMQP) Published(n int) { p.stored.Add(int64(n)) }

// Redelivered counts the queue's redeliveries since Mark (RabbitMQ
// redelivers a message whose consumer's channel closed before it was
// acknowledged). They are named "redelivery#k".
func (p *AMQP) Redelivered(ctx context.Context) ([]string, error) {
	s, marked, err := p.sinceMark(ctx)
	if err != nil {
		return nil, err
	}
	n := max(s.Stats.Redeliver-marked.Stats.Redeliver, 0)
	out := make([]string, 0, n)
	for k := range n {
		out = append(out, fmt.Sprintf("%s redelivery#%d", p.queue, k))
	}
	return out, nil
}
