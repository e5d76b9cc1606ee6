package faults

import "testing"

// TestParseFaultMessages: the messages of --fault are what they were,
// ParseSpec's under the flag and its value.
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
		if _, err := ParseFlag(in); err == nil || err.Error() != want {
			t.Errorf("ParseFlag(%q) = %v, want %s", in, err, want)
		}
	}
}
