package runner

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// heard records what an observer was told.
type heard struct{ calls *[]string }

func (h heard) Start(total int, d time.Duration) {
	*h.calls = append(*h.calls, fmt.Sprint("start ", total, d))
}
func (h heard) OpDone(op int, state history.OpState) {
	*h.calls = append(*h.calls, fmt.Sprint("op ", op))
}

// heardAll hears attempts and phases too.
type heardAll struct{ heard }

func (h heardAll) AttemptDone(a history.Attempt) {
	*h.calls = append(*h.calls, fmt.Sprint("attempt ", a.Op))
}
func (h heardAll) Phase(what string) { *h.calls = append(*h.calls, "phase "+what) }

func TestObservers(t *testing.T) {
	var some, all []string
	obs := Observers{heard{&some}, heardAll{heard{&all}}}
	obs.Start(2, time.Second)
	obs.AttemptDone(history.Attempt{Op: 0})
	obs.OpDone(0, history.Acked)
	obs.Phase("reading the oracles")
	if want := []string{"start 2 1s", "op 0"}; !slices.Equal(some, want) {
		t.Errorf("an Observer heard %q, want %q", some, want)
	}
	if want := []string{"start 2 1s", "attempt 0", "op 0", "phase reading the oracles"}; !slices.Equal(all, want) {
		t.Errorf("an observer of attempts and phases heard %q, want %q", all, want)
	}
}
