package faults

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/internal/hint"
)

// FlagError is a bad argument with what to write instead (hint.Error).
type FlagError = hint.Error

func flagError(h string, err error) error { return hint.New(h, err) }

// ParseFlag reads a --fault flag (ParseSpec), its errors naming the flag
// and its value.
func ParseFlag(s string) (Spec, error) {
	spec, err := ParseSpec(s)
	if err != nil {
		return Spec{}, fmt.Errorf("--fault %q: %w", s, err)
	}
	return spec, nil
}

// ParseFlags reads the HTTP proxy's --fault flags and checks their values
// (New). Its errors name the flag and its value.
func ParseFlags(fs []string) ([]Spec, error) {
	var specs []Spec
	for _, f := range fs {
		spec, err := ParseFlag(f)
		if err != nil {
			return nil, err
		}
		if _, err := New(spec); err != nil {
			return nil, flagError("KIND=RATE with RATE in [0, 1], e.g. drop_ack=0.1 or timeout=0.05,after=50ms",
				fmt.Errorf("--fault %q: %s", f, strings.ReplaceAll(err.Error(), "\n", "; ")))
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// ParseTCPFlags completes f, the TCP proxy's faults from its own flags,
// with --bandwidth (empty for no cap) and the --fault flags it shares with
// the HTTP proxy, and validates the whole. Its errors name the flag.
func ParseTCPFlags(f TCPFaults, bandwidth string, fs []string) (TCPFaults, error) {
	if bandwidth != "" {
		bw, err := ParseBytes(bandwidth)
		if err != nil {
			return f, flagError("bytes per second: 1MB, 64KB or 10000", fmt.Errorf("--bandwidth %q: %w", bandwidth, err))
		}
		f.Bandwidth = bw
	}
	latency := f.Latency
	for _, s := range fs {
		spec, err := ParseFlag(s)
		if err != nil {
			return f, err
		}
		if _, err := New(spec); err != nil {
			return f, fmt.Errorf("--fault %q: %s", s, strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		if spec.Kind == KindDelay && latency != 0 {
			return f, flagError("one hold per exchange: --latency D, or --fault delay=RATE,delay=D for a share of them", fmt.Errorf("--fault %q and --latency both set", s))
		}
		if err := f.Add(spec); err != nil {
			return f, flagError("the TCP proxy shares delay and reset with the HTTP proxy; see --latency, --down, --reset-after, --bandwidth", fmt.Errorf("--fault %q: %w", s, err))
		}
	}
	if err := f.Validate(); err != nil {
		return f, err
	}
	return f, nil
}
