package scenarios

import (
	"slices"
	"strings"
	"testing"
)

// The demo's order: the classic four first, then every other protected
// built-in, each once.
func TestShowcase(t *testing.T) {
	got := Showcase()
	if !slices.Equal(got[:4], []string{"charges-lost-ack", "charges-timeout", "likes-duplicate", "debit-cas"}) {
		t.Errorf("Showcase() starts %q, want the classic four", got[:4])
	}
	for _, n := range BuiltinNames() {
		if want := !strings.HasSuffix(n, "-naive") && !QueueBuiltin(n); slices.Contains(got, n) != want {
			t.Errorf("Showcase() holds %s: %v, want %v", n, !want, want)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
		t.Errorf("Showcase() = %q lists a scenario twice", got)
	}
	if !HasNaive("charges-lost-ack") || HasNaive("charges-lost-ack-naive") {
		t.Errorf("HasNaive(charges-lost-ack, its naive variant) = %v, %v; want true, false", HasNaive("charges-lost-ack"), HasNaive("charges-lost-ack-naive"))
	}
}

// What a charge costs comes from the scenario's request, not its name:
// every built-in charge sends 100 cents; likes and debits charge nothing.
func TestChargeCents(t *testing.T) {
	for name, want := range map[string]int64{"charges-lost-ack": 100, "charges-replay-naive": 100, "likes-duplicate": 0, "debit-cas": 0} {
		sc, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.ChargeCents(); got != want {
			t.Errorf("ChargeCents(%s) = %d, want %d", name, got, want)
		}
	}
}

// QueuePairs are the pairs a broker of the URL's kind takes, without
// the consumer_cut built-in (its proxy is not the demo's).
func TestQueuePairs(t *testing.T) {
	for url, want := range map[string][]string{
		"redis://127.0.0.1:6379/0":           {"stream-charges"},
		"nats://127.0.0.1:4222":              {"nats-charges"},
		"amqp://guest:guest@127.0.0.1:5672/": {"amqp-charges"},
		"kafka://127.0.0.1:9092":             {"kafka-charges"},
		"http://127.0.0.1:8080":              nil,
		"":                                   nil,
	} {
		if got := QueuePairs(url); !slices.Equal(got, want) {
			t.Errorf("QueuePairs(%q) = %v, want %v", url, got, want)
		}
	}
}
