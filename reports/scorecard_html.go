package reports

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/clip"
)

// An audit's HTML page: the scorecard's table, each check that did not
// pass with its evidence, and a timeline per probe: every request the
// check's probe sent, as a bar from its send to its answer, coloured by
// what came back. Self-contained: no script, nothing loaded.

var scorecardHTML = template.Must(template.New("scorecard").Funcs(template.FuncMap{
	"upper":    func(s any) string { return strings.ToUpper(fmt.Sprint(s)) },
	"cls":      scorecardClass,
	"evidence": evidenceLine,
	"timeline": func(h *history.History, id string) template.HTML { return template.HTML(probeTimeline(h, id)) },
	"tally":    scoreTally,
	"shown": func(c checks.ContractCheck) bool {
		return (c.Result == checks.Fail || c.Result == checks.Unknown) && len(c.Evidence) > 0
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>idemcheck audit: {{.S.Method}} {{.S.Target}}: {{.S.Result}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827; margin: 0 auto; max-width: 960px; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 32px 0 4px; padding-top: 12px; border-top: 2px solid #e5e7eb; }
h3 { font-size: 15px; margin: 20px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { text-align: left; padding: 3px 10px 3px 0; border-bottom: 1px solid #e5e7eb; vertical-align: top; }
th { font-weight: 600; color: #374151; }
.pass { color: #15803d; } .fail { color: #b91c1c; } .unknown { color: #a16207; } .skipped { color: #6b7280; }
.met { color: #15803d; } .not_met { color: #b91c1c; } .inconclusive { color: #a16207; }
.mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; white-space: pre-wrap; word-break: break-all; }
.note { color: #6b7280; font-size: 12.5px; }
svg.chart { display: block; max-width: 100%; height: auto; font-family: system-ui, sans-serif; }
svg .row { font-size: 10.5px; fill: #374151; } svg .axis { font-size: 10.5px; fill: #6b7280; }
</style>
</head>
<body>
<h1 class="{{.S.Result}}">idemcheck audit: {{upper .S.Result}}</h1>
<p>{{.S.Why}}</p>
<p class="note">{{.S.Method}} {{.S.Target}} · profile {{.S.Profile}} · effects: {{.S.Oracle}} · {{tally .S}}{{if .S.Interrupted}} · interrupted{{end}}</p>
<table>
<tr><th>id</th><th>check</th><th>severity</th><th>result</th><th>summary</th></tr>
{{range .S.Checks}}<tr><td><a href="#{{.ID}}">{{.ID}}</a></td><td>{{.Name}}</td><td>{{.Severity}}</td><td class="{{cls .Result}}">{{.Result}}</td><td>{{.Summary}}</td></tr>
{{end}}</table>
{{range .S.Checks}}{{if ne (print .Result) "skipped"}}
<h2 id="{{.ID}}">{{.ID}} {{.Name}}: <span class="{{cls .Result}}">{{.Result}}</span></h2>
<p>{{.Summary}}</p>
{{if $.H}}{{timeline $.H .ID}}{{end}}
{{if shown .}}<h3>Evidence</h3>
<div class="mono">{{range .Evidence}}{{evidence .}}
{{end}}</div>{{end}}
{{end}}{{end}}
</body>
</html>
`))

// scorecardClass is the CSS class of a check's result.
func scorecardClass(s checks.Status) string { return string(s) }

// writeScorecardHTML writes the audit's page; h, when not nil, is the
// audit's history, whose probes it draws.
func writeScorecardHTML(w io.Writer, sc *checks.Scorecard, h *history.History) error {
	return scorecardHTML.Execute(w, struct {
		S *checks.Scorecard
		H *history.History
	}{sc, h})
}

// probeTimeline draws every request check's probe sent: a row per
// request, a bar from its send to its answer (or to when it gave up),
// green for a 2xx, amber for a 409/425/429, red for another 4xx or a
// 5xx, grey for no answer. Rows are labelled with the request's role.
func probeTimeline(h *history.History, check string) string {
	type row struct {
		label      string
		start, end time.Duration
		colour     string
		what       string
	}
	var rows []row
	ops := map[int]bool{}
	for _, op := range h.Ops {
		if op.Check == check {
			ops[op.ID] = true
		}
	}
	var t0, t1 time.Duration = -1, 0
	for _, a := range h.Attempts {
		if !ops[a.Op] {
			continue
		}
		r := row{label: a.Label, start: a.Start, end: max(a.End, a.Start), colour: "#9ca3af", what: "no answer"}
		if a.Fault != "" {
			r.label += " [" + a.Fault + "]"
		}
		if a.Outcome == history.OK {
			r.what = fmt.Sprint(a.Status)
			switch {
			case a.Status >= 200 && a.Status < 300:
				r.colour = "#16a34a"
			case a.Status == 409 || a.Status == 425 || a.Status == 429:
				r.colour = "#d97706"
			default:
				r.colour = "#dc2626"
			}
		}
		rows = append(rows, r)
		if t0 < 0 || r.start < t0 {
			t0 = r.start
		}
		t1 = max(t1, r.end)
	}
	if len(rows) == 0 {
		return ""
	}
	const maxRows = 60
	more := 0
	if len(rows) > maxRows {
		more = len(rows) - maxRows
		rows = rows[:maxRows]
	}
	span := max(t1-t0, time.Millisecond)
	const left, width, rowH = 260, 640, 14
	height := len(rows)*rowH + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="the probe's requests over time">`, left+width+60, height)
	for i, r := range rows {
		y := 4 + i*rowH
		x := left + int(float64(r.start-t0)/float64(span)*width)
		wd := max(int(float64(r.end-r.start)/float64(span)*width), 2)
		fmt.Fprintf(&b, `<text class="row" x="%d" y="%d" text-anchor="end">%s</text>`, left-6, y+10, template.HTMLEscapeString(clip.Words(r.label, 44)))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s: %s, %s</title></rect>`, x, y+2, wd, rowH-4, r.colour,
			template.HTMLEscapeString(r.label), r.what, (r.end - r.start).Round(time.Microsecond))
		fmt.Fprintf(&b, `<text class="row" x="%d" y="%d">%s</text>`, x+wd+4, y+10, r.what)
	}
	y := len(rows)*rowH + 20
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d">0</text><text class="axis" x="%d" y="%d" text-anchor="end">%s</text>`,
		left, y, left+width, y, span.Round(time.Millisecond))
	b.WriteString(`</svg>`)
	if more > 0 {
		fmt.Fprintf(&b, `<p class="note">and %d more requests (history.jsonl holds them all)</p>`, more)
	}
	return b.String()
}
