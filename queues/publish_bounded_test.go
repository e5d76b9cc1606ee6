package queues

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestPublishBounded: a publish whose write never ends (a broker that
// stopped reading) is given up when its context ends, with its cause,
// as maybe sent; one that ends is returned as it ended.
func TestPublishBounded(t *testing.T) {
	t.Parallel()
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	cause := errors.New("interrupted")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	start := time.Now()
	dc, gaveUp, err := publishBounded(ctx, func() (*amqp.DeferredConfirmation, error) {
		<-stuck
		return nil, errors.New("closed")
	})
	if !gaveUp || dc != nil || !errors.Is(err, cause) || !strings.Contains(err.Error(), "resource alarm") {
		t.Errorf("a stuck publish: %v, gave up %v, %v; want given up with the cause", dc, gaveUp, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("given up after %v", d)
	}
	refused := errors.New("channel closed")
	if _, gaveUp, err := publishBounded(context.Background(), func() (*amqp.DeferredConfirmation, error) { return nil, refused }); gaveUp || !errors.Is(err, refused) {
		t.Errorf("a failed publish: gave up %v, %v; want its error", gaveUp, err)
	}
}
