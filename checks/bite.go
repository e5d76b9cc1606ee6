package checks

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
)

// A fault that is planned is not a fault that bit: a timeout of 1s on an
// API that answers in 30 ms never fires, and a run that passes under it
// says nothing of what a client that gives up would do. The attempts say
// whether their fault bit (history.Attempt.Bit, when Meta.BitRecorded);
// a run whose faults of a kind were planned and never bit cannot pass on
// them: it is inconclusive, with the reason, the latency measured and a
// value that would bite. A kind that bit on some of its attempts is
// enough: the run did what the scenario asked.

// biteTally counts, per fault kind, the attempts it was planned for and
// those it bit, and measures the clean attempts' latency (a timeout that
// would bite is shorter than it).
type biteTally struct {
	planned, bit map[string]int
	clean        *hdrhistogram.Histogram
}

func (b *biteTally) add(h *history.History) {
	if b.planned == nil {
		b.planned, b.bit, b.clean = map[string]int{}, map[string]int{}, measure.NewHistogram()
	}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		switch {
		case a.Fault == "":
			if a.Outcome == history.OK {
				measure.Record(b.clean, a.Latency())
			}
		case history.IsReplay(a.Fault):
		default:
			b.planned[a.Fault]++
			if a.Bit {
				b.bit[a.Fault]++
			}
		}
	}
}

// p50 is the clean attempts' median latency; false when none answered.
func (b *biteTally) p50() (time.Duration, bool) {
	if b.clean == nil || b.clean.TotalCount() == 0 {
		return 0, false
	}
	return measure.PercentilesOf(b.clean).P50, true
}

// unbitten says, for each fault kind planned that never bit, why and what
// would bite, in the order of the kinds' names.
func (b *biteTally) unbitten(meta history.Meta) []string {
	var kinds []string
	for k, n := range b.planned {
		if n > 0 && b.bit[k] == 0 {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, b.why(k, meta))
	}
	if cc := meta.ConsumerCut; cc != nil && (cc.Redelivered == 0 || cc.Cuts == 0) {
		why := fmt.Sprintf("the consumer_cut never bit (%d cuts at %s, %d messages redelivered)", cc.Cuts, cc.Listen, cc.Redelivered)
		switch {
		case cc.Err != "":
			why += ": the redeliveries could not be watched: " + cc.Err
		case cc.Cuts == 0:
			why += ": is the consumer pointed at " + cc.Listen + ", the proxy, rather than at the broker?"
		default:
			why += ": the consumer reconnected and acknowledged before the broker handed anything out again; a higher rate cuts more deliveries before their acknowledgement"
		}
		out = append(out, why)
	}
	return out
}

// why says why the faults of kind never bit, with the latency measured
// and, where a parameter sets it, a value that would bite.
func (b *biteTally) why(kind string, meta history.Meta) string {
	n := b.planned[kind]
	head := fmt.Sprintf("the %s faults never bit (%d planned, 0 bit)", kind, n)
	p50, ok := b.p50()
	lat := "no clean attempt was answered to measure the latency"
	if ok {
		lat = fmt.Sprintf("the target answering in %s (p50 of the clean attempts)", roundDur(p50))
	}
	switch kind {
	case "timeout":
		if !ok {
			return head + ": none fired before its answer, " + lat
		}
		half := max(roundDur(p50/2), time.Microsecond)
		was := ""
		for _, r := range calibrated(meta, kind) {
			was = fmt.Sprintf(" (after %s was %s)", r.Relative, roundDur(r.Value))
		}
		return fmt.Sprintf("%s: every answer came before the deadline%s, %s; after: %s (half the p50) or after: 0.5x would bite",
			head, was, lat, half)
	case "duplicate":
		switch t := meta.Target; {
		case strings.HasPrefix(t, "nats://"), strings.HasPrefix(t, "tls://"):
			return head + ": the broker stored no message twice (JetStream drops a copy whose Nats-Msg-Id it has stored, within the stream's duplicate window: a dedup of the broker's, which leaves the consumer's untested; put the id in another header to test it)"
		case t != "" && !strings.HasPrefix(t, "http://") && !strings.HasPrefix(t, "https://"):
			return head + ": the broker stored no message twice (every second copy was refused, or deduplicated by the broker)"
		}
		return fmt.Sprintf("%s: no two copies were in flight at once, each answered before another was written, %s; a slower operation (or a target over http://, where copies are sent with last-byte synchronisation) would make them overlap",
			head, lat)
	case "drop_ack":
		return head + ": no answer came to drop, every faulted attempt failed first"
	case "delay":
		return head + ": every delay was cut short before the request was sent"
	}
	return head + ", " + lat
}

// calibrated are the relative parameters of kind's faults a calibration
// resolved, as the history recorded them.
func calibrated(meta history.Meta, kind string) []history.Resolved {
	if meta.Calibration == nil {
		return nil
	}
	var out []history.Resolved
	for _, r := range meta.Calibration.Resolved {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// roundDur rounds d for a message: to the microsecond under 10 ms, else
// to a tenth of a millisecond.
func roundDur(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}

// decide makes a run that would pass on faults that never bit
// inconclusive: a pass that expected one, or a violation expected and not
// caught (the faults that would have provoked it did nothing). A failure,
// or a violation caught, stands. The faults that never bit are warnings
// in any case. It judges only a history that recorded whether its
// faults bit (Meta.BitRecorded).
func (b *biteTally) decide(meta history.Meta, out *Judgement) {
	if !meta.BitRecorded {
		return
	}
	whys := b.unbitten(meta)
	if len(whys) == 0 {
		return
	}
	violation := meta.Judge.Expect == "violation"
	switch {
	case !violation && out.Result == Met:
		out.Result, out.Why = Inconclusive, "every invariant held, but the run cannot pass on faults that did nothing: "+strings.Join(whys, "; ")
	case violation && out.Result == NotMet && !caught(out.Verdicts) && !slow(out.Thresholds):
		out.Result, out.Why = Inconclusive, "expected a violation and none was caught, but faults that did nothing could not provoke one: "+strings.Join(whys, "; ")
	default:
		out.Warnings = append(out.Warnings, whys...)
	}
}
