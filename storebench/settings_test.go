package storebench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSettingsCheck(t *testing.T) {
	t.Parallel()
	ok := Settings{Redis: "redis://127.0.0.1:1/0", Concurrency: []int{1, 8}, Duration: time.Second, ValueSize: 256, RPS: 10, TTL: time.Hour, Roundtrips: 2, Format: "text"}
	if err := ok.Check(); err != nil || ok.Steps() != 2*len(RedisPrimitives) {
		t.Fatalf("valid settings: %v, %d steps", err, ok.Steps())
	}
	for _, c := range []struct {
		edit func(*Settings)
		want string
	}{
		{func(s *Settings) { s.Redis = "" }, "needs --redis or --postgres"},
		{func(s *Settings) { s.TTL = time.Millisecond }, "--ttl at least 1s"},
		{func(s *Settings) { s.ValueSize = MaxValueSize + 1 }, "at most 16777216 bytes"},
		{func(s *Settings) { s.Duration = 2 * time.Hour }, "at most 1h"},
		{func(s *Settings) { s.Concurrency = []int{5000} }, "want 1 to 4096"},
		{func(s *Settings) { s.Format = "xml" }, `--format "xml"`},
	} {
		s := ok
		c.edit(&s)
		err := s.Check()
		var ae *ArgError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an ArgError saying %q", s, err, c.want)
		}
	}
}
