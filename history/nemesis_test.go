package history

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A history keeps its nemesis windows: a saved run is judged again with
// them, and a run without any writes no "nemesis" at all.
func TestNemesisWindowsRoundTrip(t *testing.T) {
	h := sample()
	h.Meta.Nemesis = []NemesisWindow{
		{Fault: 2, N: 1, Start: time.Second, Ready: 1500 * time.Millisecond,
			Stop:    &NemesisCommand{Command: "kill -9 42", Start: time.Second, End: time.Second + time.Millisecond},
			Restart: &NemesisCommand{Command: "./serve", Start: time.Second + time.Millisecond, End: 1100 * time.Millisecond, Exit: 0}},
		{Fault: 2, N: 2, Start: 3 * time.Second, Ready: 3 * time.Second, Err: "stop command exited 1",
			Stop: &NemesisCommand{Command: "kill -9 42", Start: 3 * time.Second, End: 3 * time.Second, Exit: 1, Output: "no such process", Err: "exited 1"}},
	}
	text := encoded(t, h)
	got, err := Decode(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h.Meta.Nemesis, got.Meta.Nemesis, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Meta.Nemesis after a round trip (-want +got):\n%s", diff)
	}
	if plain := encoded(t, sample()); strings.Contains(plain, "nemesis") {
		t.Errorf("a history without a nemesis names one:\n%s", plain)
	}
}
