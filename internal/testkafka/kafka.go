// Package testkafka gives tests a throwaway Kafka cluster, as testsvc
// gives them the other servers; apart from testsvc so that the test
// binaries that start no Kafka do not link franz-go's fake cluster.
package testkafka

import (
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// KafkaEnv names a real Kafka cluster (kafka://HOST:PORT) the Kafka tests
// run against instead of an in-process one.
const KafkaEnv = "IDEMCHECK_KAFKA"

// Kafka returns the URL "kafka://127.0.0.1:PORT" of a throwaway Kafka
// cluster: franz-go's in-process kfake, a fake that speaks Kafka's wire
// protocol (produce, fetch, consumer groups, offset commits, topic
// admin) on a loopback port, closed when the test ends. No Kafka broker
// is in the package registries this project's CI reaches; when
// IDEMCHECK_KAFKA names a real cluster, that one is returned instead,
// and the caller must keep its tests apart there (shared, it is not
// emptied).
func Kafka(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(KafkaEnv); u != "" {
		if !strings.HasPrefix(u, "kafka://") {
			t.Fatalf("%s=%q: want kafka://HOST:PORT", KafkaEnv, u)
		}
		return u
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1)) // it listens on 127.0.0.1, on a free port
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return "kafka://" + c.ListenAddrs()[0]
}

// RealKafka reports whether the Kafka tests run on a real cluster
// (IDEMCHECK_KAFKA), shared by every test.
func RealKafka() bool { return os.Getenv(KafkaEnv) != "" }
