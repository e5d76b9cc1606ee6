package trial

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/hint"
	"github.com/idemcheck/idemcheck/internal/pause"
)

// consumerCut runs a scenario's consumer_cut: a TCP proxy on its listen
// address in front of the broker, which the consumer is pointed at. It
// passes everything until the load starts, cuts a share of the chunks
// while the load runs, and passes everything again while the consumer
// drains; meanwhile it watches the broker for messages handed out more
// than once (redeliveries), the proof that a cut bit.
type consumerCut struct {
	spec faults.Spec
	// off passes everything, the whole run: the consumer reaches the
	// broker through the proxy and nothing is cut (the consumer
	// battery's other checks, on a scenario whose consumer is pointed at
	// the proxy).
	off    bool
	proxy  *faults.TCPProxy
	stop   context.CancelFunc
	served chan struct{}
	cuts   int64 // cut during the load

	watchStop context.CancelFunc
	watched   chan struct{}
	mu        sync.Mutex
	seen      map[string]bool
	err       string
}

// redeliveryPoll is how often the broker's redeliveries are read.
const redeliveryPoll = 5 * time.Millisecond

// startConsumerCut starts the proxy of the scenario's consumer_cut, if it
// has one, in front of the broker at upstream (host:port).
func (t *Trial) startConsumerCut(ctx context.Context, upstream string) error {
	var spec *faults.Spec
	for i := range t.sc.Faults {
		if t.sc.Faults[i].Kind == faults.KindConsumerCut {
			spec = &t.sc.Faults[i]
		}
	}
	if spec == nil {
		return nil
	}
	p, err := faults.NewTCPProxy(upstream, faults.TCPFaults{}, t.opts.Seed)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", spec.Listen)
	if err != nil {
		return hint.New("choose another listen address for the consumer_cut, and point the consumer at it",
			fmt.Errorf("consumer_cut: listening on %s: %w", spec.Listen, err))
	}
	ctx, stop := context.WithCancel(context.Background())
	c := &consumerCut{spec: *spec, proxy: p, stop: stop, served: make(chan struct{}), seen: map[string]bool{}}
	go func() {
		defer close(c.served)
		_ = p.Serve(ctx, ln)
	}()
	t.cut = c
	c.connected(ctx)
	return nil
}

// begin starts cutting, and watching for redeliveries.
func (c *consumerCut) begin(q publisher) {
	if c == nil || c.off {
		return
	}
	_ = c.proxy.SetFaults(faults.TCPFaults{CutRate: c.spec.Rate})
	ctx, stop := context.WithCancel(context.Background())
	c.watchStop, c.watched = stop, make(chan struct{})
	go func() {
		defer close(c.watched)
		for {
			ids, err := q.Redelivered(ctx)
			c.mu.Lock()
			switch {
			case err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "no such key"):
				c.err = err.Error()
			case err == nil:
				c.err = "" // the broker answers again
				for _, id := range ids {
					c.seen[id] = true
				}
			}
			c.mu.Unlock()
			if !pause.For(ctx, redeliveryPoll) {
				return
			}
		}
	}()
}

// end stops cutting once every message published has been handed to
// the consumer (each delivery under the cut), or after wait: the
// consumer then drains on a whole connection.
func (c *consumerCut) end(ctx context.Context, q publisher, wait time.Duration) {
	if c == nil || c.off {
		return
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if ok, err := q.Delivered(context.WithoutCancel(ctx)); ok || err != nil || !pause.For(ctx, redeliveryPoll) {
			break
		}
	}
	c.cuts = c.proxy.Stats().Cuts
	_ = c.proxy.SetFaults(faults.TCPFaults{})
}

// connectWait is how long the load waits for the consumer to connect
// through a consumer_cut's proxy.
const connectWait = 5 * time.Second

// connected waits, up to connectWait, until the consumer has connected
// through the proxy: a load published before it has would be consumed
// after the cuts.
func (c *consumerCut) connected(ctx context.Context) {
	deadline := time.Now().Add(connectWait)
	for c.proxy.Stats().Conns == 0 && time.Now().Before(deadline) && pause.For(ctx, redeliveryPoll) {
	}
}

// record stops watching and says what the cut did.
func (c *consumerCut) record() *history.ConsumerCut {
	if c == nil || c.off {
		return nil
	}
	if c.watchStop != nil {
		c.watchStop()
		<-c.watched
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &history.ConsumerCut{Rate: c.spec.Rate, Listen: c.spec.Listen, Cuts: c.cuts, Redelivered: len(c.seen), Err: c.err}
	if c.proxy.Stats().Conns == 0 {
		out.Err = "no consumer connected through the proxy at " + c.spec.Listen
	}
	return out
}

// close stops the proxy.
func (c *consumerCut) close() {
	if c == nil {
		return
	}
	if c.watchStop != nil {
		c.watchStop()
		<-c.watched
	}
	c.stop()
	<-c.served
}
