package checks

import (
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// The nemesis in the judgement: a run whose scenario stopped and
// restarted the target (history.Meta.Nemesis) names, in its evidence,
// the keys whose attempts span a window (a key in flight when the target
// died, or retried across its restart: where a crash leaves a key stuck
// or charged twice), and cannot pass on a window that did not go as
// declared (a command that failed, a target not ready in time, a moment
// the load never reached): the crash it was to provoke may not have
// happened.

// NemesisSpans returns the numbers (1-based, in the order of ws) of the
// nemesis windows that a key's attempts span: its first attempt started
// before the window ended (the target ready again) and its last one ended
// after the window opened (the stop command run).
func NemesisSpans(attempts []history.Attempt, ws []history.NemesisWindow) []int {
	if len(attempts) == 0 {
		return nil
	}
	first, last := attempts[0].Start, attempts[0].End
	for _, a := range attempts {
		first, last = min(first, a.Start), max(last, a.End)
	}
	var out []int
	for i, w := range ws {
		if w.Stop != nil && first <= w.Ready && last >= w.Start {
			out = append(out, i+1)
		}
	}
	return out
}

// NemesisWindowText says what a window was, in a few words: "nemesis
// window 1: the target stopped at 1.20 s, ready at 1.85 s".
func NemesisWindowText(n int, w history.NemesisWindow) string {
	if w.Stop == nil {
		return fmt.Sprintf("nemesis window %d: %s", n, w.Err)
	}
	return fmt.Sprintf("nemesis window %d: the target stopped at %s, ready at %s", n, windowTime(w.Start), windowTime(w.Ready))
}

func windowTime(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// judgeNemesis names the nemesis windows in the evidence of every
// example whose attempts span one, and makes the result inconclusive
// when a window did not go as declared and nothing was caught.
func judgeNemesis(out *Judgement, meta history.Meta) {
	ws := meta.Nemesis
	if len(ws) == 0 {
		return
	}
	for i := range out.Verdicts {
		for k := range out.Verdicts[i].Examples {
			ex := &out.Verdicts[i].Examples[k]
			spans := NemesisSpans(ex.Attempts, ws)
			if len(spans) == 0 {
				continue
			}
			note := "its attempts span " + NemesisWindowText(spans[0], ws[spans[0]-1])
			if len(spans) > 1 {
				note += fmt.Sprintf(" (and %d more)", len(spans)-1)
			}
			if ex.Problem == "" {
				ex.Problem = fmt.Sprintf("%d effects, want %s", ex.Effects, ex.Want)
			}
			ex.Problem += "; " + note
		}
	}
	for i, w := range ws {
		if w.Err == "" {
			continue
		}
		if out.Result != Inconclusive && !caught(out.Verdicts) && (out.Result == Met || meta.Judge.Expect == "violation") {
			out.Result, out.Why = Inconclusive, fmt.Sprintf("nemesis window %d did not go as declared: %s", i+1, w.Err)
		}
		break
	}
}
