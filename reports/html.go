package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
)

// htmlExamples is how many keys of a failing verdict the HTML report
// draws a timeline for; report.json holds every example.
const htmlExamples = 5

//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"headline":    headline,
	"headMark":    headMark,
	"mark":        mark,
	"resultWord":  resultWord,
	"verdictMark": verdictMark,
	"verdictName": verdictName,
	"verdictLine": verdictLine,
	"attribution": attributionLine,
	"threshold":   thresholdLine,
	"problem":     exampleProblem,
	"countList":   countList,
	"faultList":   faultList,
	"calibration": calibrationLine,
	"stageLine":   stageLine,
	"quantity":    quantity,
	"answer":      answerText,
	"latencySVG": func(c *measure.Charts, ws []history.NemesisWindow) template.HTML {
		return template.HTML(LatencyChart(c, ws...))
	},
	"nemesisLine":     func(i int, w history.NemesisWindow) string { return nemesisLine(i+1, w) },
	"consumerCutLine": consumerCutLine,
	"distSVG":         func(c *measure.Charts) template.HTML { return template.HTML(DistributionChart(c)) },
	"timelineSVG":     func(ex checks.Example) template.HTML { return template.HTML(TimelineChart(ex)) },
	"ms":              func(d time.Duration) string { return quantity(measure.MS(d), "ms") },
	"latency":         func(a history.Attempt) string { return quantity(measure.MS(a.Latency()), "ms") },
	"seconds":         func(s *Summary) string { return fmt.Sprintf("%.1f s", runTime(s).Seconds()) },
	"utc":             func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"failing":         failing,
	"examples": func(v checks.Verdict) []checks.Example {
		return v.Examples[:min(len(v.Examples), htmlExamples)]
	},
	"more": func(v checks.Verdict) int { return max(len(v.Examples)-htmlExamples, 0) },
	"percentiles": func(l Latency) []namedPercentiles {
		return []namedPercentiles{{"attempt (clean)", l.Attempt}, {"op (retries included)", l.Op}}
	},
	"expected": expectedViolation,
	"errored":  func(s *Summary) bool { return s.Result == Errored },
}).Parse(htmlSource))

type namedPercentiles struct {
	Name string
	P    Percentiles
}

// failing lists the verdicts that failed, the evidence the report draws.
func failing(s *Summary) []checks.Verdict {
	var out []checks.Verdict
	for _, v := range s.Verdicts {
		if v.Status == checks.Fail {
			out = append(out, v)
		}
	}
	return out
}

// WriteHTML writes one self-contained HTML page: the verdicts with their
// evidence, the latency over time with every injected fault marked, the
// latency percentile distribution of clean and faulted attempts, and for
// each failing key (up to five per invariant) the timeline of its
// attempts. Charts are inline SVG; the page loads nothing, runs no
// script and prints on paper as it shows on screen.
func WriteHTML(w io.Writer, ss []*Summary) error {
	return htmlTemplate.Execute(w, ss)
}
