package reports

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/clip"
	"github.com/idemcheck/idemcheck/measure"
)

// The charts are inline SVG written here rather than by a plotting
// library: there are three small kinds (a line chart, a percentile
// distribution, a timeline of one key's attempts), the output is
// deterministic byte for byte (the golden file checks it), needs no font
// or script, prints as vectors, and adds no dependency. Every mark has a
// <title>, so hovering it in a browser says what it is.

// Colours of the marks. The screenshot test looks for them.
const (
	colP50     = "#1d4ed8"
	colP99     = "#7c3aed"
	colMax     = "#9ca3af"
	colClean   = "#1d4ed8"
	colFaulted = "#ea580c"
	colOK      = "#60a5fa" // a 2xx answer
	colAnswer  = "#c084fc" // another answer (3xx, 4xx, 5xx)
	colInfo    = "#fb923c" // indeterminate
	colFail    = "#f472b6" // certainly not sent
	colAxis    = "#6b7280"
	colGrid    = "#e5e7eb"
)

// faultPalette colours the fault kinds package faults injects, by their
// place in history.FaultKinds, which never changes: a kind added there
// takes the next colour. It holds spare colours for those.
var faultPalette = []string{
	"#65a30d", "#dc2626", "#0891b2", "#db2777", "#ca8a04", // delay, drop_ack, duplicate, reset, timeout
	"#0d9488", "#4f46e5", "#a16207", "#be123c", "#15803d",
}

// faultColours colour the fault kinds package faults injects; others (the
// replays, a kind from another version) are drawn grey.
var faultColours = func() map[string]string {
	m := map[string]string{}
	for i, k := range history.FaultKinds {
		m[k] = faultPalette[i%len(faultPalette)]
	}
	return m
}()

func faultColour(kind string) string {
	if c, ok := faultColours[kind]; ok {
		return c
	}
	return "#475569"
}

// svgBuf writes SVG elements; text is escaped.
type svgBuf struct{ strings.Builder }

func (b *svgBuf) f(format string, args ...any) { fmt.Fprintf(b, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

// num formats a coordinate: one decimal, no trailing zeros.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// niceStep is a round step (1, 2 or 5 × 10ⁿ) dividing [0, top] in about n.
func niceStep(top float64, n int) float64 {
	if top <= 0 {
		return 1
	}
	raw := top / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// niceTop is the first multiple of step at or above top.
func niceTop(top, step float64) float64 {
	if top <= 0 {
		return step
	}
	return math.Ceil(top/step-1e-9) * step
}

// plot is a chart's drawing area inside its SVG.
type plot struct {
	w, h                     float64 // the whole SVG
	left, right, top, bottom float64 // margins
}

func (p plot) x0() float64 { return p.left }
func (p plot) x1() float64 { return p.w - p.right }
func (p plot) y0() float64 { return p.h - p.bottom }
func (p plot) y1() float64 { return p.top }

func (p plot) open(b *svgBuf, class, label string) {
	b.f(`<svg class="chart %s" viewBox="0 0 %s %s" width="%s" height="%s" font-family="system-ui, sans-serif" font-size="11" role="img" aria-label="%s">`,
		class, num(p.w), num(p.h), num(p.w), num(p.h), esc(label))
	b.f(`<title>%s</title>`, esc(label))
}

// yAxis draws horizontal grid lines and labels for [0, top] by step.
func (p plot) yAxis(b *svgBuf, top, step float64, unit string) {
	at, labels := valueTicks(top, step)
	for i, v := range at {
		y := p.y0() - v/top*(p.y0()-p.y1())
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(p.x0()), num(y), num(p.x1()), num(y), colGrid)
		b.f(`<text x="%s" y="%s" text-anchor="end" class="tick">%s</text>`, num(p.x0()-6), num(y+4), labels[i])
	}
	b.f(`<text x="12" y="%s" transform="rotate(-90 12 %s)" text-anchor="middle" class="axis">%s</text>`,
		num((p.y0()+p.y1())/2), num((p.y0()+p.y1())/2), esc(unit))
	b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(p.x0()), num(p.y0()), num(p.x1()), num(p.y0()), colAxis)
}

func (p plot) empty(b *svgBuf, msg string) {
	b.f(`<text x="%s" y="%s" text-anchor="middle" class="empty">%s</text>`, num(p.w/2), num(p.h/2), esc(msg))
}

// LatencyChart draws the clean attempts' latency over the run (p50, p99
// and max of each time slice) with every injected fault marked below the
// time axis, a row per kind, and the nemesis windows ws shaded.
func LatencyChart(c *measure.Charts, ws ...history.NemesisWindow) string {
	kinds := 0
	if c != nil {
		kinds = len(c.FaultKinds)
	}
	p := plot{w: 860, h: 290 + 16*float64(kinds), left: 64, right: 110, top: 14, bottom: 60 + 16*float64(kinds)}
	var b svgBuf
	p.open(&b, "latency-chart", "Latency over time, injected faults marked")
	if c == nil || (len(c.Buckets) == 0 && len(c.Faults) == 0) {
		p.yAxis(&b, 1, 1, "ms")
		p.empty(&b, "no attempt was answered")
		b.f(`</svg>`)
		return b.String()
	}
	top := 0.0
	for _, k := range c.Buckets {
		top = max(top, measure.MS(k.Max))
	}
	step := niceStep(top, 5)
	top = niceTop(top, step)
	p.yAxis(&b, top, step, "latency (ms)")
	span := c.Span.Seconds()
	nemesisBands(&b, p, span, ws)
	colW := (p.x1() - p.x0()) / measure.Columns
	xOf := func(col int) float64 { return p.x0() + (float64(col)+0.5)*colW }
	yOf := func(v float64) float64 { return p.y0() - v/top*(p.y0()-p.y1()) }
	// time axis
	ts := timeScaleOf(c.Span, 8)
	for _, t := range ts.ticks(c.Span) {
		x := p.x0()
		if span > 0 {
			x += t.Seconds() / span * (p.x1() - p.x0())
		}
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x), num(p.y0()), num(x), num(p.y0()+4), colAxis)
		b.f(`<text x="%s" y="%s" text-anchor="middle" class="tick">%s</text>`, num(x), num(p.y0()+16), ts.label(t))
	}
	b.f(`<text x="%s" y="%s" text-anchor="middle" class="axis">time since the start of the run, by intended send</text>`,
		num((p.x0()+p.x1())/2), num(p.y0()+32))
	series := []struct {
		name, colour, dash string
		v                  func(measure.Bucket) float64
	}{
		{"max", colMax, ` stroke-dasharray="3 3"`, func(k measure.Bucket) float64 { return measure.MS(k.Max) }},
		{"p99", colP99, "", func(k measure.Bucket) float64 { return measure.MS(k.P99) }},
		{"p50", colP50, "", func(k measure.Bucket) float64 { return measure.MS(k.P50) }},
	}
	for i, s := range series {
		var pts []string
		for _, k := range c.Buckets {
			pts = append(pts, num(xOf(k.Column))+","+num(yOf(s.v(k))))
		}
		b.f(`<g class="series series-%s"><title>%s of clean attempts</title>`, s.name, s.name)
		if len(pts) > 0 {
			b.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, strings.Join(pts, " "), s.colour, s.dash)
		}
		if len(pts) == 1 {
			b.f(`<circle cx="%s" cy="%s" r="3" fill="%s"/>`, num(xOf(c.Buckets[0].Column)), num(yOf(s.v(c.Buckets[0]))), s.colour)
		}
		b.f(`</g>`)
		ly := p.y1() + 10 + float64(i)*16
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/><text x="%s" y="%s" class="legend">%s</text>`,
			num(p.x1()+10), num(ly), num(p.x1()+30), num(ly), s.colour, s.dash, num(p.x1()+36), num(ly+4), s.name)
	}
	// the fault rug: a row per kind under the time axis
	row := map[string]int{}
	for i, k := range c.FaultKinds {
		row[k] = i
		y := p.y0() + 44 + float64(i)*16
		b.f(`<text x="%s" y="%s" text-anchor="end" class="tick">%s</text>`, num(p.x0()-6), num(y+9), esc(k))
	}
	for _, m := range c.Faults {
		y := p.y0() + 44 + float64(row[m.Kind])*16
		t0 := c.Span * time.Duration(m.Column) / measure.Columns
		b.f(`<rect class="fault" x="%s" y="%s" width="%s" height="10" fill="%s"><title>%s ×%d at %s–%s</title></rect>`,
			num(p.x0()+float64(m.Column)*colW), num(y), num(max(colW-0.5, 1.5)), faultColour(m.Kind), esc(m.Kind), m.Count,
			durationText(t0), durationText(t0+c.Span/measure.Columns))
	}
	b.f(`</svg>`)
	return b.String()
}

// DistributionChart draws the latency percentile distribution of clean
// and faulted attempts, as HDR histograms are drawn: latency against the
// percentile on a scale of nines (p90, p99, p99.9, …).
func DistributionChart(c *measure.Charts) string {
	p := plot{w: 860, h: 300, left: 64, right: 150, top: 14, bottom: 48}
	var b svgBuf
	p.open(&b, "distribution-chart", "Latency by percentile, clean and faulted attempts")
	if c == nil || (c.Clean.Count == 0 && c.Faulted.Count == 0) {
		p.yAxis(&b, 1, 1, "ms")
		p.empty(&b, "no latency recorded")
		b.f(`</svg>`)
		return b.String()
	}
	top, nines := 0.0, 1.0
	for _, d := range []measure.Distribution{c.Clean, c.Faulted} {
		for _, pt := range d.Points {
			top, nines = max(top, measure.MS(pt.Latency)), max(nines, pt.Nines)
		}
	}
	nines = math.Ceil(nines - 1e-9)
	step := niceStep(top, 5)
	top = niceTop(top, step)
	p.yAxis(&b, top, step, "latency (ms)")
	xOf := func(n float64) float64 { return p.x0() + n/nines*(p.x1()-p.x0()) }
	yOf := func(v float64) float64 { return p.y0() - v/top*(p.y0()-p.y1()) }
	for n := 0.0; n <= nines; n++ {
		x := xOf(n)
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x), num(p.y1()), num(x), num(p.y0()), colGrid)
		b.f(`<text x="%s" y="%s" text-anchor="middle" class="tick">%s</text>`, num(x), num(p.y0()+16), ninesLabel(n))
	}
	b.f(`<text x="%s" y="%s" text-anchor="middle" class="axis">percentile</text>`, num((p.x0()+p.x1())/2), num(p.y0()+34))
	for i, s := range []struct {
		name, colour string
		d            measure.Distribution
	}{{"clean", colClean, c.Clean}, {"faulted", colFaulted, c.Faulted}} {
		label := fmt.Sprintf("%s (n=%d)", s.name, s.d.Count)
		b.f(`<g class="series series-%s"><title>%s attempts, n=%d</title>`, s.name, s.name, s.d.Count)
		var pts []string
		for _, pt := range s.d.Points {
			pts = append(pts, num(xOf(pt.Nines))+","+num(yOf(measure.MS(pt.Latency))))
		}
		if len(pts) > 0 {
			b.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.Join(pts, " "), s.colour)
			last := s.d.Points[len(s.d.Points)-1]
			b.f(`<circle cx="%s" cy="%s" r="3" fill="%s"><title>max %s</title></circle>`, num(xOf(last.Nines)), num(yOf(measure.MS(s.d.Max))), s.colour, quantity(measure.MS(s.d.Max), "ms"))
		}
		b.f(`</g>`)
		ly := p.y1() + 10 + float64(i)*16
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/><text x="%s" y="%s" class="legend">%s</text>`,
			num(p.x1()+10), num(ly), num(p.x1()+30), num(ly), s.colour, num(p.x1()+36), num(ly+4), esc(label))
	}
	b.f(`</svg>`)
	return b.String()
}

func ninesLabel(n float64) string {
	if n == 0 {
		return "p0"
	}
	pct := 100 * (1 - math.Pow(10, -n))
	return "p" + strconv.FormatFloat(pct, 'f', -1, 64)
}

// TimelineChart draws one key's attempts on a time axis, in the manner of
// Jepsen's timelines: a bar per attempt from its send to its end (a thin
// line before it from the intended send: queueing), coloured by outcome
// (blue a 2xx, purple another answer, orange indeterminate, pink not
// sent), its fault and answer beside it, and every further answer it
// received (a duplicate's other copies, an answer a fault hid: hollow) as
// a dot at the time it came.
func TimelineChart(ex checks.Example) string {
	as := ex.Attempts
	const rowH = 30
	p := plot{w: 860, h: 56 + rowH*float64(max(len(as), 1)), left: 150, right: 230, top: 10, bottom: 46}
	var b svgBuf
	p.open(&b, "timeline-chart", "Timeline of key "+ex.Key)
	if len(as) == 0 {
		p.empty(&b, "no attempt recorded for this key")
		b.f(`</svg>`)
		return b.String()
	}
	t0, t1 := as[0].Intended, as[0].End
	for _, a := range as {
		t0 = min(t0, a.Intended, a.Start)
		t1 = max(t1, a.End)
		for _, an := range a.Answers {
			t1 = max(t1, an.End)
		}
	}
	ts := timeScaleOf(max(t1-t0, time.Microsecond), 6)
	top := ts.top(max(t1-t0, time.Microsecond))
	xOf := func(t time.Duration) float64 { return p.x0() + float64(t-t0)/float64(top)*(p.x1()-p.x0()) }
	for _, v := range ts.ticks(top) {
		x := xOf(t0 + v)
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x), num(p.y1()), num(x), num(p.y0()), colGrid)
		b.f(`<text x="%s" y="%s" text-anchor="middle" class="tick">%s</text>`, num(x), num(p.y0()+16), ts.label(v))
	}
	b.f(`<text x="%s" y="%s" text-anchor="middle" class="axis">time since the key's first intended send (%s into the run)</text>`,
		num((p.x0()+p.x1())/2), num(p.y0()+34), esc(durationText(t0)))
	for i, a := range as {
		y := p.y1() + 6 + float64(i)*rowH
		label := fmt.Sprintf("#%d", a.N)
		if a.Fault != "" {
			label += " " + a.Fault
		}
		if a.Copies > 1 {
			label += fmt.Sprintf(" ×%d", a.Copies)
		}
		b.f(`<g class="attempt outcome-%s">`, a.Outcome)
		b.f(`<text x="%s" y="%s" text-anchor="end" class="row">%s</text>`, num(p.x0()-8), num(y+14), esc(label))
		if a.Start > a.Intended {
			b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-dasharray="2 2"><title>queued %s before sending</title></line>`,
				num(xOf(a.Intended)), num(y+10), num(xOf(a.Start)), num(y+10), colAxis, esc(quantity(msOf(a.Start-a.Intended), "ms")))
		}
		x0, x1 := xOf(a.Start), xOf(a.End)
		b.f(`<rect x="%s" y="%s" width="%s" height="20" rx="3" fill="%s"><title>%s</title></rect>`,
			num(x0), num(y), num(max(x1-x0, 3)), outcomeColour(a.Outcome, a.Status), esc(attemptText(a, 0)))
		b.f(`<text x="%s" y="%s" class="row">%s</text>`, num(p.x1()+8), num(y+14), esc(clip.Words(answerText(a), 34)))
		for _, an := range a.Answers {
			fill, what := outcomeColour(an.Outcome, an.Status), "copy"
			if an.Hidden {
				fill, what = "white", "hidden answer"
			}
			if an.Copy > 1 {
				what = fmt.Sprintf("copy %d", an.Copy)
			}
			b.f(`<circle cx="%s" cy="%s" r="5" fill="%s" stroke="%s" stroke-width="2"><title>%s: %s</title></circle>`,
				num(xOf(an.End)), num(y+10), fill, outcomeColour(an.Outcome, an.Status), esc(what), esc(answerOf(an.Outcome, an.Status, an.Fields, an.Err)))
		}
		b.f(`</g>`)
	}
	b.f(`</svg>`)
	return b.String()
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func outcomeColour(o history.Outcome, status int) string {
	switch {
	case o == history.OK && status >= 200 && status < 300:
		return colOK
	case o == history.OK:
		return colAnswer
	case o == history.Fail:
		return colFail
	}
	return colInfo
}

// answerText is what an attempt got back, in a few words.
func answerText(a history.Attempt) string {
	s := answerOf(a.Outcome, a.Status, a.Fields, a.Err) + headersText(a.Headers)
	for _, an := range a.Answers {
		if an.Hidden {
			s += fmt.Sprintf("; hidden %s", answerOf(an.Outcome, an.Status, nil, ""))
		}
	}
	return s
}

func answerOf(o history.Outcome, status int, fields map[string]string, err string) string {
	if o != history.OK {
		if err != "" {
			return o.String() + ": " + err
		}
		return o.String()
	}
	s := strconv.Itoa(status)
	for _, k := range sortedKeys(fields) {
		s += " " + k + "=" + fields[k]
	}
	return s
}
