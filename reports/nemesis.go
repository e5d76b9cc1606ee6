package reports

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/clip"
)

// consumerCutLine says what a consumer_cut did: "consumer_cut: 25 cuts
// at 127.0.0.1:16379 (rate 0.05), 61 messages redelivered".
func consumerCutLine(c *history.ConsumerCut) string {
	s := fmt.Sprintf("consumer_cut: %d cuts at %s (rate %g), %d messages redelivered", c.Cuts, c.Listen, c.Rate, c.Redelivered)
	if c.Err != "" {
		s += " (" + c.Err + ")"
	}
	return s
}

// colNemesis shades a nemesis window on the latency chart.
const colNemesis = "#f59e0b"

// nemesisLine is nemesis window n (1-based, as the judgement numbers
// them) in one line: when the target was stopped and ready again, the
// commands with their exit status, and what went wrong, if anything.
func nemesisLine(n int, w history.NemesisWindow) string {
	if w.Stop == nil {
		return fmt.Sprintf("nemesis window %d (faults[%d]): FAILED: %s", n, w.Fault, w.Err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "nemesis window %d (faults[%d]): stopped at %.2f s by %s", n, w.Fault, w.Start.Seconds(), commandText(w.Stop))
	if w.Restart != nil {
		fmt.Fprintf(&b, ", started by %s", commandText(w.Restart))
	}
	fmt.Fprintf(&b, ", ready at %.2f s (%.2f s down)", w.Ready.Seconds(), (w.Ready - w.Start).Seconds())
	if w.Err != "" {
		fmt.Fprintf(&b, "; FAILED: %s", w.Err)
		for _, c := range []*history.NemesisCommand{w.Stop, w.Restart} {
			if c != nil && c.Err != "" && c.Output != "" {
				fmt.Fprintf(&b, "; its output: %s", clip.Words(oneLine(c.Output), 160))
				break
			}
		}
	}
	return b.String()
}

// commandText is a command and its exit status: "`kill -9 42` (exit 0)".
func commandText(c *history.NemesisCommand) string {
	if c.Exit < 0 {
		return fmt.Sprintf("`%s` (%s)", clip.Words(c.Command, 120), c.Err)
	}
	return fmt.Sprintf("`%s` (exit %d)", clip.Words(c.Command, 120), c.Exit)
}

// nemesisBands shades each nemesis window on a latency chart over
// [x0, x1] that spans span seconds from the start of the run.
func nemesisBands(b *svgBuf, p plot, span float64, ws []history.NemesisWindow) {
	if span <= 0 {
		return
	}
	xOf := func(s float64) float64 { return p.x0() + min(max(s/span, 0), 1)*(p.x1()-p.x0()) }
	for i, w := range ws {
		if w.Stop == nil {
			continue
		}
		x0, x1 := xOf(w.Start.Seconds()), xOf(w.Ready.Seconds())
		b.f(`<rect class="nemesis" x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.18"><title>nemesis window %d: the target stopped at %.2f s, ready at %.2f s</title></rect>`,
			num(x0), num(p.y1()), num(max(x1-x0, 1.5)), num(p.y0()-p.y1()), colNemesis, i+1, w.Start.Seconds(), w.Ready.Seconds())
	}
}
