package storebench

import (
	"errors"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/internal/hint"
)

// MaxValueSize bounds --value-size: every record the bench writes holds
// one, in the measured store's memory.
const MaxValueSize = 16 << 20

// Settings are bench store's flags.
type Settings struct {
	Redis       string
	Postgres    string
	Concurrency []int
	Duration    time.Duration
	ValueSize   int
	RPS         int
	TTL         time.Duration
	Roundtrips  int
	Format      string
}

// ArgError is a bad argument with what to write instead (hint.Error).
type ArgError = hint.Error

func argError(h string, err error) error { return hint.New(h, err) }

// Check refuses settings the bench cannot run with, before anything is
// sent, with the bound in the message.
func (s *Settings) Check() error {
	if s.Redis == "" && s.Postgres == "" {
		return argError("e.g. --redis redis://127.0.0.1:6379/0", errors.New("bench store needs --redis or --postgres"))
	}
	if s.Duration <= 0 || s.ValueSize <= 0 || s.RPS <= 0 || s.TTL < time.Second || s.Roundtrips <= 0 {
		return argError("", errors.New("--duration, --value-size, --rps and --roundtrips must be positive, --ttl at least 1s"))
	}
	if s.ValueSize > MaxValueSize {
		return argError("a stored response is a response body: e.g. --value-size 512", fmt.Errorf("--value-size %d: at most %d bytes (16 MiB)", s.ValueSize, MaxValueSize))
	}
	if s.Duration > time.Hour {
		return argError("e.g. --duration 5s", fmt.Errorf("--duration %v: at most 1h per primitive", s.Duration))
	}
	for _, c := range s.Concurrency {
		if c <= 0 || c > 4096 {
			return argError("", fmt.Errorf("--concurrency %d: want 1 to 4096", c))
		}
	}
	switch s.Format {
	case "text", "json":
	default:
		return argError("text or json", fmt.Errorf("--format %q", s.Format))
	}
	return nil
}

// Steps is how many measurements the settings make: each primitive of
// each store at each concurrency.
func (s *Settings) Steps() int {
	n := 0
	if s.Redis != "" {
		n += len(RedisPrimitives)
	}
	if s.Postgres != "" {
		n += len(PostgresPrimitives)
	}
	return n * len(s.Concurrency)
}
