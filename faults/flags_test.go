package faults

import (
	"errors"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	specs, err := ParseFlags([]string{"drop_ack=0.1", "timeout=0.05,after=50ms"})
	if err != nil || len(specs) != 2 || specs[0].Kind != KindDropAck || specs[1].After != 50*time.Millisecond {
		t.Fatalf("ParseFlags = %+v, %v", specs, err)
	}
	if specs, err := ParseFlags(nil); err != nil || specs != nil {
		t.Errorf("ParseFlags(nil) = %+v, %v; want none", specs, err)
	}
	var fe *FlagError
	if _, err := ParseFlags([]string{"drop_ack"}); err == nil || errors.As(err, &fe) || err.Error() != `--fault "drop_ack": want KIND=RATE, like drop_ack=0.1` {
		t.Errorf("syntax error = %v, want the flag's message and no hint", err)
	}
	_, err = ParseFlags([]string{"drop_ack=0.1", "drop_ack=2"})
	if !errors.As(err, &fe) || fe.Hint() != "KIND=RATE with RATE in [0, 1], e.g. drop_ack=0.1 or timeout=0.05,after=50ms" {
		t.Errorf("bad rate = %v, want a *FlagError with a hint", err)
	}
}

func TestParseTCPFlags(t *testing.T) {
	f, err := ParseTCPFlags(TCPFaults{Jitter: time.Millisecond}, "64KB", []string{"delay=0.5,delay=2ms", "reset=0.1"})
	want := TCPFaults{Latency: 2 * time.Millisecond, LatencyRate: 0.5, Jitter: time.Millisecond, ResetRate: 0.1, Bandwidth: 64000}
	if err != nil || f != want {
		t.Errorf("ParseTCPFlags = %+v, %v; want %+v", f, err, want)
	}
	for _, c := range []struct {
		f         TCPFaults
		bandwidth string
		fs        []string
		hint      bool
	}{
		{fs: []string{"drop_ack=0.1"}, hint: true},
		{f: TCPFaults{Latency: time.Millisecond}, fs: []string{"delay=1,delay=1ms"}, hint: true},
		{bandwidth: "fast", hint: true},
		{fs: []string{"reset=2"}},
		{fs: []string{"reset"}},
		{f: TCPFaults{Latency: -time.Millisecond}},
	} {
		_, err := ParseTCPFlags(c.f, c.bandwidth, c.fs)
		var fe *FlagError
		if err == nil || errors.As(err, &fe) != c.hint {
			t.Errorf("ParseTCPFlags(%+v, %q, %q) = %v; want an error, with a hint: %v", c.f, c.bandwidth, c.fs, err, c.hint)
		}
	}
}
