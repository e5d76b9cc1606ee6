// Package queues publishes a scenario's ops to a message broker: the
// runner's Sender for a queue target (operation.publish). An attempt is a
// publish; the message id is the op's key, the same on every republish.
// The consumer behind the broker is the system under test: its effects
// are read by the scenario's oracles once it has drained (Drained).
package queues

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/hint"
	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/scenarios"
)

// ConfirmedStatus is the status a confirmed publish is recorded with: the
// broker took the message (history.Attempt.Acked).
const ConfirmedStatus = 200

// DuplicateStatus is the status of a publish the broker confirmed as a
// duplicate of a message it had stored, and dropped (JetStream, a
// Nats-Msg-Id within the stream's duplicate window): confirmed, but no
// consumer is handed it.
const DuplicateStatus = 208

// RedisStream publishes each attempt to a Redis stream with XADD: the
// entry's id field carries the message id, its body field the rendered
// body. XADD's answer (the entry's id) is the broker's confirm.
type RedisStream struct {
	client             *redis.Client
	stream             string
	idField, bodyField string
	body               *scenarios.Text
	broker             string // the broker's address, for messages
	after              string // Mark's entry id: Redelivered counts the entries after it
	marked             bool   // Mark read it
}

// NewRedisStream is the publisher of sc (operation.publish) to the Redis
// at broker; env is what the body's template reads. It connects nothing:
// Ping does.
func NewRedisStream(sc *scenarios.Scenario, broker *url.URL, env func(string) string) (*RedisStream, error) {
	p := sc.Operation.Publish
	if p == nil {
		return nil, errors.New("the scenario publishes nothing (operation.publish)")
	}
	opt, err := redis.ParseURL(broker.String())
	if err != nil {
		return nil, hint.New("target: redis://HOST:6379/0 (rediss:// for TLS)", fmt.Errorf("broker %s: %w", redact.URL(broker), err))
	}
	opt.MaxRetries = -1                                                  // a publish is sent once: a retry is the runner's, recorded
	opt.PoolSize = max(64, 4*sc.Load.Concurrency, 2*sc.Load.MaxInFlight) // a copy never waits for a connection
	body, err := scenarios.NewText("operation.body", sc.Operation.Body, env)
	if err != nil {
		return nil, err
	}
	return &RedisStream{client: redis.NewClient(opt), stream: p.Stream, idField: p.IDField, bodyField: p.BodyField, body: body, broker: broker.Host}, nil
}

// Close closes the connections.
func (p *RedisStream) Close() error { return p.client.Close() }

// Ping checks that the broker answers.
func (p *RedisStream) Ping(ctx context.Context) error {
	if err := p.client.Ping(ctx).Err(); err != nil {
		return hint.New("is Redis running at "+p.broker+", and the URL right (its password too)? e.g. --target redis://127.0.0.1:6379/0",
			fmt.Errorf("broker %s unreachable: %w", p.broker, err))
	}
	return nil
}

// RecordsBit reports that Send says whether each fault bit.
func (p *RedisStream) RecordsBit() bool { return true }

// Send publishes one attempt: XADD of the message (its id the op's key).
// A duplicate fault adds Copies entries of it at once (a producer's
// double send: it bit when two or more were added); drop_ack adds it and
// loses the confirm (outcome info: the runner republishes, as a producer
// whose confirm timed out does; it bit when the entry was added); delay
// waits first (it bit when the whole wait elapsed). The attempt is ok
// when the broker confirmed every entry, fail when none was added, info
// when it cannot be told.
func (p *RedisStream) Send(ctx context.Context, v scenarios.Vars, f faults.Fault, a *history.Attempt, now func() time.Duration) error {
	body, _, copies, err := publishing(ctx, p.body, v, f, a, now, func() (struct{}, error) { return struct{}{}, nil })
	if err != nil || copies == 0 {
		return err
	}
	defer func() { a.End = now() }()
	fields := map[string]any{p.idField: v.Key, p.bodyField: body}
	ids, errs := p.add(ctx, fields, copies)
	switch {
	case len(ids) == 0:
		a.Outcome, a.Err = history.Fail, "not published: "+errs[0].Error()
		if maybeSent(errs[0]) {
			a.Outcome = history.Info // the command may have reached the broker
		}
		return nil
	case len(ids) < copies:
		// the broker confirmed the message: the copies that failed are
		// noted, the attempt is acknowledged
		a.Outcome, a.Status, a.Err = history.OK, ConfirmedStatus, fmt.Sprintf("%d of %d copies published: %v", len(ids), copies, errs[0])
	default:
		a.Outcome, a.Status = history.OK, ConfirmedStatus
	}
	afterPublish(f, a, len(ids))
	return nil
}

// add adds copies entries of fields at once; it returns the ids the broker
// confirmed and the errors of the others.
func (p *RedisStream) add(ctx context.Context, fields map[string]any, copies int) (ids []string, errs []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := p.client.XAdd(ctx, &redis.XAddArgs{Stream: p.stream, Values: fields}).Result()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ids = append(ids, id)
		}()
	}
	wg.Wait()
	return ids, errs
}

// maybeSent reports whether a failed XADD may have reached the broker: a
// connection that broke or a deadline that passed after it was written.
func maybeSent(err error) bool {
	var re redis.Error
	if errors.As(err, &re) {
		return false // the broker answered: it refused
	}
	return !strings.Contains(err.Error(), "connect: connection refused") && !strings.Contains(err.Error(), "dial tcp")
}

// Drained reports whether every consumer group of the stream has had
// every entry delivered and acknowledged: none pending, none not yet
// delivered. why says what is left, or that no group reads the stream.
func (p *RedisStream) Drained(ctx context.Context) (ok bool, why string, err error) {
	info, err := p.client.XInfoStream(ctx, p.stream).Result()
	if err != nil {
		return false, "", fmt.Errorf("reading stream %s: %w", p.stream, err)
	}
	groups, err := p.client.XInfoGroups(ctx, p.stream).Result()
	if err != nil {
		return false, "", fmt.Errorf("reading the consumer groups of stream %s: %w", p.stream, err)
	}
	if len(groups) == 0 {
		return false, fmt.Sprintf("no consumer group reads stream %s: is the consumer running?", p.stream), nil
	}
	var left []string
	for _, g := range groups {
		behind := idLess(g.LastDeliveredID, info.LastGeneratedID)
		if g.Pending > 0 || behind {
			s := fmt.Sprintf("group %s: %d delivered and not acknowledged", g.Name, g.Pending)
			if behind {
				s += fmt.Sprintf(", entries after %s not yet delivered", g.LastDeliveredID)
			}
			left = append(left, s)
		}
	}
	if len(left) > 0 {
		return false, strings.Join(left, "; "), nil
	}
	return true, "", nil
}

// idLess compares two stream entry ids ("ms-seq").
func idLess(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am < bm || am == bm && as < bs
}

func splitID(id string) (uint64, uint64) {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	s, _ := strconv.ParseUint(seq, 10, 64)
	return m, s
}

// Mark notes the stream's last entry: Redelivered counts only the
// entries added after it (this run's).
func (p *RedisStream) Mark(ctx context.Context) {
	info, err := p.client.XInfoStream(ctx, p.stream).Result()
	switch {
	case err == nil:
		p.after, p.marked = info.LastGeneratedID, true
	case strings.Contains(err.Error(), "no such key"):
		p.after, p.marked = "0-0", true // no stream yet: every entry is this run's
	}
}

// Redelivered returns the ids of the stream's entries (after Mark) now
// pending in a consumer group that the broker has delivered more than
// once: claimed again after a consumer left them unacknowledged.
func (p *RedisStream) Redelivered(ctx context.Context) ([]string, error) {
	if !p.marked {
		// counting from the stream's start would count earlier runs' entries
		return nil, errors.New("the stream's last entry could not be read before the load")
	}
	groups, err := p.client.XInfoGroups(ctx, p.stream).Result()
	if err != nil {
		return nil, fmt.Errorf("reading the consumer groups of stream %s: %w", p.stream, err)
	}
	var out []string
	for _, g := range groups {
		if g.Pending == 0 {
			continue
		}
		start := "-"
		if p.after != "" {
			start = "(" + p.after
		}
		pend, err := p.client.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: p.stream, Group: g.Name, Start: start, End: "+", Count: 10000}).Result()
		if err != nil {
			return nil, fmt.Errorf("reading the pending entries of stream %s: %w", p.stream, err)
		}
		for _, e := range pend {
			if e.RetryCount > 1 {
				out = append(out, e.ID)
			}
		}
	}
	return out, nil
}

// Delivered reports whether every consumer group of the stream has been
// handed every entry at least once (acknowledged or not).
func (p *RedisStream) Delivered(ctx context.Context) (bool, error) {
	info, err := p.client.XInfoStream(ctx, p.stream).Result()
	if err != nil {
		return false, err
	}
	groups, err := p.client.XInfoGroups(ctx, p.stream).Result()
	if err != nil || len(groups) == 0 {
		return false, err
	}
	for _, g := range groups {
		if idLess(g.LastDeliveredID, info.LastGeneratedID) {
			return false, nil
		}
	}
	return true, nil
}
