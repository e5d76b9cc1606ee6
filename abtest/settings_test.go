package abtest

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
)

// good are settings that pass every check.
func good() Settings {
	return Settings{BaselineNoKey: true, Rate: "100", Duration: time.Second, Block: DefaultBlock,
		MaxInFlight: 1, Timeout: time.Second, Format: "text", MaxRequests: DefaultMaxRequests, Resamples: 10}
}

func TestSettingsChecks(t *testing.T) {
	s := good()
	if err := s.CheckBaseline(); err != nil {
		t.Fatalf("CheckBaseline(good) = %v", err)
	}
	if b, rate, auto, err := s.Parse(); err != nil || b != nil || rate != 100 || auto {
		t.Fatalf("Parse(good) = %v, %v, %v, %v", b, rate, auto, err)
	}
	for name, c := range map[string]struct {
		change func(*Settings)
		want   string
	}{
		"no cap":        {func(s *Settings) { s.MaxRequests = 0 }, "--max-requests 0: want at least 1"},
		"no baseline":   {func(s *Settings) { s.BaselineNoKey = false }, "bench overhead needs one baseline"},
		"two baselines": {func(s *Settings) { s.BaselinePath = "/b" }, "bench overhead needs one baseline"},
		"not a path":    {func(s *Settings) { s.BaselineNoKey, s.BaselinePath = false, "b" }, `--baseline-path "b" is not a path`},
		"budget":        {func(s *Settings) { s.MaxOverhead = "p75=3ms" }, "--max-overhead: "},
		"format":        {func(s *Settings) { s.Format = "xml" }, `--format "xml"`},
		"rate":          {func(s *Settings) { s.Rate = "fast" }, `--rate "fast"`},
		"duration":      {func(s *Settings) { s.Duration = 0 }, "--duration, --block"},
		"warmup":        {func(s *Settings) { s.Warmup = -1 }, "--duration, --block"},
	} {
		s := good()
		c.change(&s)
		err := s.CheckBaseline()
		if err == nil {
			_, _, _, err = s.Parse()
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s", name, err, c.want)
		}
		var ae *ArgError
		if hinted := errors.As(err, &ae) && ae.Hint() != ""; hinted == (c.want == "--duration, --block") {
			t.Errorf("%s: %v has a hint: %v", name, err, hinted)
		}
	}
	s.Rate = "auto"
	if _, _, auto, err := s.Parse(); err != nil || !auto {
		t.Errorf("Parse(--rate auto) = %v, %v; want auto", auto, err)
	}
}

func TestPreview(t *testing.T) {
	op := scenarios.RequestSpec{Request: scenarios.Request{Method: "POST", Path: "/charges", Body: `{"amount":1}`},
		Key: scenarios.KeyPlace{Header: "Idempotency-Key"}, Targets: []string{"http://127.0.0.1:8080"}}
	as, bs := ArmSpecs(op, "/naive/charges", false)
	a, err := scenarios.FromRequest("test", as)
	if err != nil {
		t.Fatal(err)
	}
	b, err := scenarios.FromRequest("test", bs)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse("http://127.0.0.1:8080")
	o := Options{Rate: 100, Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond, Block: 100 * time.Millisecond}
	p := NewPreview(a, b, false, target, o, RateOptions{}, false)
	want := "bench overhead: POST /charges (A) and POST /naive/charges (B) to http://127.0.0.1:8080; about 100 mutating requests (2 arms × 500ms × 100/s, warm-up 100ms included), a fresh key per op"
	if p.What != "POST /charges (A) and POST /naive/charges (B)" || p.Total != 100 || p.Line != want {
		t.Errorf("NewPreview = %+v, want %q", p, want)
	}
	if err := p.Within(100); err != nil {
		t.Errorf("Within(100) = %v", err)
	}
	var ae *ArgError
	if err := p.Within(99); !errors.As(err, &ae) || ae.Hint() == "" {
		t.Errorf("Within(99) = %v, want an *ArgError with a hint", err)
	}
	p = NewPreview(a, b, true, target, o, RateOptions{}, true)
	if !strings.Contains(p.What, "(B, no key)") || p.Total != AutoOps(o, RateOptions{}) || !strings.Contains(p.Line, "--rate auto: at most") {
		t.Errorf("NewPreview(auto, no key) = %+v", p)
	}
}

func TestRatesFoundAndMutating(t *testing.T) {
	if got := RatesFound(400, 500, 200); got != "A sustains 400 ops/s, B 500 ops/s (A/B 80%); benching at 200 ops/s" {
		t.Errorf("RatesFound = %q", got)
	}
	if got := RatesFound(400, 0, 0); !strings.Contains(got, "(A/B 0%)") {
		t.Errorf("RatesFound with B at 0 = %q", got)
	}
	if Mutating("GET") || Mutating("HEAD") || Mutating("OPTIONS") || !Mutating("POST") || !Mutating("DELETE") {
		t.Error("Mutating: GET, HEAD, OPTIONS read; the rest write")
	}
}
