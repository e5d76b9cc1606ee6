package checks

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

// The prefixes of the error of an attempt the runner could not send.
const (
	RenderErrPrefix = history.RenderErrPrefix
	BeforeErrPrefix = history.BeforeErrPrefix
)

// unsentTally counts the ops the runner could not send at all.
type unsentTally struct {
	ops, unsent int
	first       string // the first such op's error
}

func (t *unsentTally) add(h *history.History) {
	for i := range h.Ops {
		as := h.AttemptsOf(i)
		if len(as) == 0 {
			continue
		}
		t.ops++
		if a := as[0]; len(as) == 1 && a.Outcome == history.Fail && (strings.HasPrefix(a.Err, RenderErrPrefix) || strings.HasPrefix(a.Err, BeforeErrPrefix)) {
			t.unsent++
			if t.first == "" {
				t.first = a.Err
			}
		}
	}
}

// reason says why a run that lost ops this way cannot be met, or "".
func (t *unsentTally) reason() string {
	if t.unsent == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d ops were never sent (%s): the load the scenario describes was not made", t.unsent, t.ops, t.first)
}
