package cmd

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults"
)

// TestParseFaultFollowsFaultParams: --fault takes RATE and exactly the
// kind-specific parameters package faults declares, each setting its own
// field of the spec; attempts is refused, since the proxy sees every
// request as a first attempt.
func TestParseFaultFollowsFaultParams(t *testing.T) {
	for _, p := range faults.Params() {
		switch {
		case p.Name == "rate":
			spec, err := parseFault(faults.KindDropAck + "=" + p.Example)
			if err != nil || !p.IsSet(spec) {
				t.Errorf("parseFault(drop_ack=%s) = %+v, %v; want the rate set", p.Example, spec, err)
			}
		case p.Kind == "":
			in := faults.KindDropAck + "=0.1," + p.Name + "=" + p.Example
			if _, err := parseFault(in); err == nil || !strings.Contains(err.Error(), "unknown parameter") {
				t.Errorf("parseFault(%q) = %v, want unknown parameter %s", in, err, p.Name)
			}
		default:
			in := p.Kind + "=0.1"
			for _, q := range faults.ParamsOf(p.Kind) {
				if q.Kind == p.Kind {
					in += "," + q.Name + "=" + q.Example
				}
			}
			spec, err := parseFault(in)
			if err != nil || !p.IsSet(spec) {
				t.Errorf("parseFault(%q) = %+v, %v; want %s set", in, spec, err, p.Name)
				continue
			}
			if _, err := faults.New(spec); err != nil {
				t.Errorf("faults.New(parseFault(%q)) = %v, want a valid fault", in, err)
			}
		}
	}
	_, err := parseFault("reset=0.1,bogus=1")
	for _, p := range faults.Params() {
		if listed := strings.Contains(err.Error(), p.Name); listed != (p.Kind != "") {
			t.Errorf("parseFault(bogus param) = %v: lists %s = %v, want %v", err, p.Name, listed, !listed)
		}
	}
}

// TestParseFaultMessages: the messages of --fault are what they were.
func TestParseFaultMessages(t *testing.T) {
	for in, want := range map[string]string{
		"drop_ack":               `--fault "drop_ack": want KIND=RATE, like drop_ack=0.1`,
		"drop_ack=x":             `--fault "drop_ack=x": rate "x" is not a number between 0 and 1`,
		"timeout=0.1,after=5":    `--fault "timeout=0.1,after=5": after "5" is not a duration like 50ms`,
		"delay=0.1,delay=x":      `--fault "delay=0.1,delay=x": delay "x" is not a duration like 50ms`,
		"duplicate=0.1,copies=x": `--fault "duplicate=0.1,copies=x": copies "x" is not a whole number`,
		"delay=0.1,wait=5ms":     `--fault "delay=0.1,wait=5ms": unknown parameter "wait": want after, copies or delay`,
		"reset=0.1,foo":          `--fault "reset=0.1,foo": parameter "foo": want NAME=VALUE`,
	} {
		if _, err := parseFault(in); err == nil || err.Error() != want {
			t.Errorf("parseFault(%q) = %v, want %s", in, err, want)
		}
	}
}
