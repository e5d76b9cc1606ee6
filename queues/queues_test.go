package queues_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
	"github.com/idemcheck/idemcheck/lab"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// startLab starts a memory lab whose consumers read the streams of the
// Redis at broker, with bugs.
func startLab(t *testing.T, broker string, bugs ...string) string {
	t.Helper()
	r, err := lab.Start(context.Background(), lab.Config{Bugs: bugs},
		lab.Backends{Store: "memory", Ledger: "memory", Consumer: broker}, 1, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r.URL
}

// broker is a throwaway broker: its URL, and RabbitMQ's management API.
type broker struct{ url, management string }

func redisBroker(t testing.TB) broker { return broker{url: testsvc.Redis(t)} }
func natsBroker(t testing.TB) broker  { return broker{url: testsvc.NATS(t)} }
func rabbitBroker(t testing.TB) broker {
	b := testsvc.RabbitMQ(t)
	return broker{url: b.URL, management: b.Management}
}

// builtin is the built-in name, publishing to b.
func builtin(t *testing.T, name string, b broker) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	if b.management != "" {
		sc.Operation.Publish.Management = b.management
	}
	return sc
}

// run runs the built-in name against the lab's consumers: its messages
// published to b, its effects read from the lab.
func run(t *testing.T, name string, b broker, service string) *trial.Judged {
	t.Helper()
	sc := builtin(t, name, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j, err := trial.Run(ctx, sc, trial.Options{Target: b.url, Service: service, Seed: 7})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { j.History.Spill.Remove() })
	return j
}

func verdict(j *trial.Judged, check string) checks.Verdict {
	for _, v := range j.Judgement.Verdicts {
		if v.Invariant == check {
			return v
		}
	}
	return checks.Verdict{}
}

// consumerCase is a built-in run against the lab's consumers with bugs,
// and what exactly_once must find.
type consumerCase struct {
	name, builtin string
	bugs          []string
	want          checks.Status
}

// checkConsumers runs each case on a broker of its own (start), the lab's
// consumers reading it: the verdict must be the case's, and both of the
// publisher's faults must have bitten.
func checkConsumers(t *testing.T, start func(testing.TB) broker, cases []consumerCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := start(t)
			j := run(t, tc.builtin, b, startLab(t, b.url, tc.bugs...))
			v := verdict(j, checks.ExactlyOnce)
			if v.Status != tc.want {
				t.Fatalf("exactly_once = %s (%s), want %s", v.Status, v.Summary, tc.want)
			}
			bit := map[string]int{}
			for _, a := range j.History.Attempts {
				if a.Bit {
					bit[a.Fault]++
				}
			}
			if bit["drop_ack"] == 0 || bit["duplicate"] == 0 || !j.History.Meta.BitRecorded {
				t.Errorf("faults that bit: %v (recorded %v), want lost confirms and double publishes", bit, j.History.Meta.BitRecorded)
			}
		})
	}
}

// TestStreamConsumers publishes the stream built-ins to a real Redis,
// where the lab's consumers charge the messages: the protected consumer
// holds exactly_once through lost confirms and double publishes, every
// fault having bitten; the naive consumer, and the protected one with a
// seeded bug, are caught.
func TestStreamConsumers(t *testing.T) {
	t.Parallel()
	testsvc.Need(t, testsvc.RedisServer) // a Redis per case: the streams' names are the lab's
	checkConsumers(t, redisBroker, []consumerCase{
		{"protected", "stream-charges", nil, checks.Pass},
		{"naive", "stream-charges-naive", nil, checks.Fail},
		{lab.BugConsumerDedupByDeliveryTag, "stream-charges", []string{lab.BugConsumerDedupByDeliveryTag}, checks.Fail},
		{lab.BugConsumerDedupAfterEffect, "stream-charges", []string{lab.BugConsumerDedupAfterEffect}, checks.Fail},
	})
}

// TestStreamWithoutConsumer: nothing reads the stream, so it never
// drains: the run is inconclusive, saying so, never met nor failed.
func TestStreamWithoutConsumer(t *testing.T) {
	t.Parallel()
	broker := testsvc.Redis(t)
	r, err := lab.Start(context.Background(), lab.Config{}, lab.Backends{Store: "memory", Ledger: "memory"}, 1, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	sc, err := scenarios.Builtin("stream-charges")
	if err != nil {
		t.Fatal(err)
	}
	sc.Quiet = scenarios.Duration(300 * time.Millisecond)
	sc.Load.Ops = 20
	j, err := trial.Run(context.Background(), sc, trial.Options{Target: broker, Service: r.URL, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	v := verdict(j, checks.ExactlyOnce)
	if v.Status != checks.Unknown || !strings.Contains(v.Summary+v.Reason, "no consumer group reads stream lab:charges") {
		t.Errorf("exactly_once = %s (%s %s), want inconclusive naming the missing consumer", v.Status, v.Summary, v.Reason)
	}
}

// TestStreamBrokerDown: an unreachable broker stops the run before its
// load, saying what to check.
func TestStreamBrokerDown(t *testing.T) {
	t.Parallel()
	sc, err := scenarios.Builtin("stream-charges")
	if err != nil {
		t.Fatal(err)
	}
	_, err = trial.Run(context.Background(), sc, trial.Options{Target: "redis://127.0.0.1:1/0", Service: "http://127.0.0.1:1", Seed: 1})
	var h interface{ Hint() string }
	if err == nil || !strings.Contains(err.Error(), "unreachable") || !errors.As(err, &h) || !strings.Contains(h.Hint(), "is Redis running") {
		t.Fatalf("error = %v, want the broker unreachable, and what to check", err)
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestStreamConsumerCut cuts the consumers' broker connection during the
// load (consumer_cut): the broker hands the messages whose
// acknowledgement was cut out again, for real (each run proves its cuts
// bit). The protected consumer charges each once; the naive one charges
// a redelivery again, and ack-before-effect leaves a message uncharged:
// both are caught.
func TestStreamConsumerCut(t *testing.T) {
	t.Parallel()
	testsvc.Need(t, testsvc.RedisServer)
	checkCuts(t, redisBroker, func(listen string, _ broker) string { return "redis://" + listen + "/0" }, 0.2, []consumerCase{
		{"protected", "stream-charges-cut", nil, checks.Pass},
		{"naive", "stream-charges-cut-naive", nil, checks.Fail},
		{lab.BugConsumerAckBeforeEffect, "stream-charges-cut", []string{lab.BugConsumerAckBeforeEffect}, checks.Fail},
	})
}

// cutSeeds are the seeds each consumer_cut case is run with: one in the
// fast suite, a sweep in the long one.
var cutSeeds = testenv.Pick([]uint64{5}, []uint64{1, 2, 3, 4, 5, 6})

// cutTries is how many runs a case's seed is given for its cut to bite.
// A cut is a share of the chunks, and how many chunks a run makes
// depends on the machine's pace: a loaded machine batches deliveries
// and acknowledgements into a few chunks, and a cut can then land only
// on chunks whose loss the broker does not notice. Such a run must be
// judged inconclusive (never met); the seed is then run again, on a new
// broker and lab, and a cut that bites in none of the tries fails.
const cutTries = 3

// checkCuts runs each case, for each of cutSeeds, on a broker of its own
// (start), the lab's consumers reaching it through a consumer_cut's proxy
// (consumer names their URL to the proxy's address) that cuts rate of
// the chunks, the cut the scenario's only fault: connections must have
// been cut, messages redelivered, and the verdict must be the case's.
// A run whose cut never bit must be judged inconclusive, and is tried
// again (cutTries).
func checkCuts(t *testing.T, start func(testing.TB) broker, consumer func(listen string, b broker) string, rate float64, cases []consumerCase) {
	for _, tc := range cases {
		for _, seed := range cutSeeds {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				t.Parallel()
				for try := 1; ; try++ {
					j := runCut(t, start, consumer, rate, tc, seed)
					cc := j.History.Meta.ConsumerCut
					if cc == nil {
						t.Fatal("the run recorded no consumer_cut")
					}
					if cc.Cuts > 0 && cc.Redelivered > 0 {
						v := verdict(j, checks.ExactlyOnce)
						if v.Status != tc.want {
							t.Fatalf("exactly_once = %s (%s), want %s; %d cuts, %d redelivered", v.Status, v.Summary, tc.want, cc.Cuts, cc.Redelivered)
						}
						t.Logf("try %d: %d cuts, %d redelivered; %s", try, cc.Cuts, cc.Redelivered, v.Summary)
						return
					}
					// the cut never bit: the run cannot pass, nor fail a
					// consumer that holds; a violation caught stands
					v := verdict(j, checks.ExactlyOnce)
					if r := j.Judgement.Result; r == checks.Met || (r != checks.Inconclusive && v.Status != tc.want) {
						t.Fatalf("a run whose cut never bit (%+v) was judged %s (%s; exactly_once %s), want inconclusive", cc, r, j.Judgement.Why, v.Status)
					}
					if try == cutTries {
						t.Fatalf("consumer_cut = %+v in each of %d tries, want connections cut and messages redelivered", cc, cutTries)
					}
					t.Logf("try %d: the cut never bit: %s; trying again", try, j.Judgement.Why)
				}
			})
		}
	}
}

// runCut runs case tc's built-in once, with seed, on a broker of its own
// and a lab whose consumers reach it through the consumer_cut's proxy.
func runCut(t *testing.T, start func(testing.TB) broker, consumer func(listen string, b broker) string, rate float64, tc consumerCase, seed uint64) *trial.Judged {
	t.Helper()
	b := start(t)
	var j *trial.Judged
	var err error
	// a port free when chosen may be taken before the proxy listens
	// (brokers and proxies start beside this test): a new one then, with
	// a new lab pointed at it
	for range 3 {
		listen := freeAddr(t)
		service := startLab(t, consumer(listen, b), tc.bugs...) // the consumers reach the broker through the cut
		sc := builtin(t, tc.builtin, b)
		sc.Faults = []scenarios.Fault{{Kind: "consumer_cut", Rate: rate, Listen: listen}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		j, err = trial.Run(ctx, sc, trial.Options{Target: b.url, Service: service, Seed: seed})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestQueueRefusals: what a queue run cannot do is refused before
// anything is sent, saying why: --service on an HTTP scenario, two
// brokers, a sharded queue run.
func TestQueueRefusals(t *testing.T) {
	t.Parallel()
	stream, err := scenarios.Builtin("stream-charges")
	if err != nil {
		t.Fatal(err)
	}
	charges, err := scenarios.Builtin("charges-lost-ack")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sc   *scenarios.Scenario
		o    trial.Options
		says string
	}{
		{charges, trial.Options{Target: "http://127.0.0.1:1", Service: "http://127.0.0.1:2"}, "--service names the API behind a queue"},
		{stream, trial.Options{Targets: []string{"redis://127.0.0.1:1/0", "redis://127.0.0.1:2/0"}, Service: "http://127.0.0.1:2"}, "one broker"},
		{stream, trial.Options{Target: "redis://127.0.0.1:1/0"}, "--service"},
	} {
		_, err := trial.Prepare(context.Background(), tc.sc, tc.o)
		if !errors.Is(err, trial.ErrConfig) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Prepare(%s, %+v) = %v, want a configuration error saying %q", tc.sc.Name, tc.o, err, tc.says)
		}
	}
	if err := trial.CheckShards(stream, 2); !errors.Is(err, trial.ErrConfig) || !strings.Contains(err.Error(), "one process") {
		t.Errorf("CheckShards(stream-charges, 2) = %v, want a refusal", err)
	}
}
