package reports

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/measure"
)

// TestTimeAxisLabels: a run's time axis steps by a round step and labels
// its ticks in the unit the run's length reads best in, with the
// decimals the step needs and no float noise (0.30000000000000004).
func TestTimeAxisLabels(t *testing.T) {
	cases := []struct {
		span time.Duration
		want []string
	}{
		{300 * time.Millisecond, []string{"0 ms", "50 ms", "100 ms", "150 ms", "200 ms", "250 ms", "300 ms"}},
		{700 * time.Microsecond, []string{"0 ms", "0.1 ms", "0.2 ms", "0.3 ms", "0.4 ms", "0.5 ms", "0.6 ms", "0.7 ms"}},
		{2500 * time.Millisecond, []string{"0 s", "0.5 s", "1 s", "1.5 s", "2 s", "2.5 s"}},
		{12 * time.Second, []string{"0 s", "2 s", "4 s", "6 s", "8 s", "10 s", "12 s"}},
		{90 * time.Second, []string{"0 s", "15 s", "30 s", "45 s", "60 s", "75 s", "90 s"}},
		{time.Hour, []string{"0 min", "10 min", "20 min", "30 min", "40 min", "50 min", "60 min"}},
		{3 * time.Hour, []string{"0 h", "0.5 h", "1 h", "1.5 h", "2 h", "2.5 h", "3 h"}},
		{9 * time.Hour, []string{"0 h", "2 h", "4 h", "6 h", "8 h"}},
	}
	for _, c := range cases {
		s := timeScaleOf(c.span, 8)
		var got []string
		for _, tk := range s.ticks(c.span) {
			got = append(got, s.label(tk))
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("ticks of a %v run (-want +got):\n%s", c.span, diff)
		}
	}
}

// TestLatencyChartAxis draws the latency chart of a sub-second, a
// second-long and an hour-long run and reads its time axis back.
func TestLatencyChartAxis(t *testing.T) {
	tick := regexp.MustCompile(`<text [^>]*class="tick">([^<]*)</text>`)
	cases := []struct {
		span time.Duration
		want []string // the time axis' labels, in order
	}{
		{300 * time.Millisecond, []string{"0 ms", "50 ms", "100 ms", "150 ms", "200 ms", "250 ms", "300 ms"}},
		{time.Second, []string{"0 s", "0.2 s", "0.4 s", "0.6 s", "0.8 s", "1 s"}},
		{time.Hour, []string{"0 min", "10 min", "20 min", "30 min", "40 min", "50 min", "60 min"}},
	}
	for _, c := range cases {
		ch := &measure.Charts{Span: c.span, Buckets: []measure.Bucket{{Column: 3, Count: 1, P50: msd(3), P99: msd(3), Max: msd(3)}},
			Faults: []measure.FaultMark{{Column: 60, Kind: "timeout", Count: 2}}, FaultKinds: []string{"timeout"}}
		svg := LatencyChart(ch)
		var labels []string
		for _, m := range tick.FindAllStringSubmatch(svg, -1) {
			if strings.ContainsAny(m[1], "mshin") && m[1] != "timeout" {
				labels = append(labels, m[1])
			}
		}
		if diff := cmp.Diff(c.want, labels); diff != "" {
			t.Errorf("time axis of a %v run (-want +got):\n%s", c.span, diff)
		}
		if strings.Contains(svg, "0000000") || strings.Contains(svg, "e+") {
			t.Errorf("the chart of a %v run holds float noise:\n%s", c.span, svg)
		}
	}
	// the y axis: a step of 0.2 ms labels 0.6, not 0.6000000000000001
	ch := &measure.Charts{Span: time.Second, Buckets: []measure.Bucket{{Column: 3, Count: 1, P50: 500 * time.Microsecond, P99: 800 * time.Microsecond, Max: 900 * time.Microsecond}}}
	svg := LatencyChart(ch)
	if !strings.Contains(svg, `class="tick">0.6</text>`) || strings.Contains(svg, "0000000") {
		t.Errorf("y axis of a sub-ms chart: want a tick 0.6 and no float noise:\n%s", svg)
	}
}

func TestDurationText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                       "0 ms",
		300 * time.Millisecond:  "300 ms",
		1250 * time.Microsecond: "1.25 ms",
		2500 * time.Millisecond: "2.5 s",
		90 * time.Second:        "1 min 30 s",
		time.Hour + 5*time.Minute + 20*time.Second: "1 h 5 min",
		3 * time.Hour: "3 h",
	} {
		if got := durationText(d); got != want {
			t.Errorf("durationText(%v) = %q, want %q", d, got, want)
		}
	}
}
