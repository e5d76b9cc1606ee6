package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// TestConsumers publishes each message twice, as a producer whose confirm
// was lost does (two entries, one message id), and once with copies at
// once, to the lab's consumers on a real Redis: the protected consumer
// charges each message once; the naive one, and the protected one with
// consumer-dedup-by-delivery-tag, charge the republished one twice. A
// poison message is acknowledged and charges nothing.
func TestConsumers(t *testing.T) {
	t.Parallel()
	testsvc.Need(t, testsvc.RedisServer)
	for _, tc := range []struct {
		name   string
		stream string
		bugs   []string
		want   int // charges of the message published twice
	}{
		{"protected", ConsumerStream, nil, 1},
		{"naive", NaiveConsumerStream, nil, 2},
		{BugConsumerDedupByDeliveryTag, ConsumerStream, []string{BugConsumerDedupByDeliveryTag}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := testsvc.Redis(t)
			tl := newTestLab(t, Config{Bugs: tc.bugs})
			c, err := tl.StartConsumers(context.Background(), url, "", "t")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Stop)
			opt, _ := redis.ParseURL(url)
			rc := redis.NewClient(opt)
			defer rc.Close()
			ctx := context.Background()
			add := func(id, body string) {
				if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: tc.stream, Values: map[string]any{ConsumerIDField: id, ConsumerBodyField: body}}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			add("msg-1", `{"amount":100,"currency":"usd"}`)
			add("msg-1", `{"amount":100,"currency":"usd"}`) // republished
			add("poison", `not json`)
			deadline := time.Now().Add(10 * time.Second)
			for {
				pending, err := rc.XPending(ctx, tc.stream, ConsumerGroup).Result()
				info, ierr := rc.XInfoGroups(ctx, tc.stream).Result()
				if err == nil && ierr == nil && pending.Count == 0 && len(info) == 1 && info[0].EntriesRead == 3 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the consumers did not drain the stream: %+v %v %+v", pending, err, info)
				}
				time.Sleep(20 * time.Millisecond)
			}
			for key, want := range map[string]int{"msg-1": tc.want, "poison": 0} {
				rows, err := tl.ledger.ChargesByKey(ctx, key)
				if err != nil || len(rows) != want {
					t.Errorf("%s: %d charges (%v), want %d", key, len(rows), err, want)
				}
			}
		})
	}
}

// TestConsumersBadURL: a --consumer that is not a broker's URL is
// refused at once, naming the flag's value and what to write.
func TestConsumersBadURL(t *testing.T) {
	tl := newTestLab(t, Config{})
	_, err := tl.StartConsumers(context.Background(), "mqtt://127.0.0.1:1883", "", "t")
	ce, ok := err.(*ConfigError)
	if !ok || ce.Field != "consumer" || ce.Hint() == "" {
		t.Fatalf("StartConsumers(mqtt://) = %v, want a ConfigError on consumer with a hint", err)
	}
}

// A broker URL the consumers cannot use is refused without its password.
func TestConsumerURLErrorsHidePasswords(t *testing.T) {
	s := newTestLab(t, Config{})
	for _, url := range []string{"redis://u:s3cret@127.0.0.1:notaport/0", "amqp://u:s3cret@127.0.0.1:notaport/", "nats://u:s3cret@127.0.0.1:notaport", "kafka://u:s3cret@127.0.0.1:notaport"} {
		c, err := s.StartConsumers(context.Background(), url, "", "t")
		if err == nil {
			c.Stop()
			continue // nats connects lazily: nothing to say yet
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("StartConsumers(%s) = %v: the password shows", url, err)
		}
	}
}
