package reports

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/termsafe"
)

// WriteAPIScorecard renders the audit of a whole API (audit --openapi) to
// w in format, one of ScorecardFormats: text and markdown (a matrix of
// operations × checks, worst operation first, then the evidence of each
// failed check), json (the stable form of docs/audit.md), junit (a suite
// per operation, a testcase per check; the operations the plan left out
// as skipped cases) or html.
func WriteAPIScorecard(w io.Writer, format string, a *checks.APIScorecard, o Options) error {
	switch format {
	case "text":
		return writeAPIText(w, a)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(a)
	case "markdown":
		return writeAPIMarkdown(w, a)
	case "junit":
		if err := o.validate(); err != nil {
			return err
		}
		return writeAPIJUnit(w, a, o.JUnitInconclusive == JUnitFailure)
	case "html":
		return apiHTML.Execute(w, apiView(a))
	}
	return fmt.Errorf("unknown format %q (known: %s)", format, strings.Join(ScorecardFormats(), ", "))
}

// apiColumns are the ids of the checks any operation ran, in contract
// order.
func apiColumns(a *checks.APIScorecard) []string {
	seen, ran := map[string]bool{}, map[string]bool{}
	for _, o := range a.Operations {
		if o.Card != nil {
			for _, c := range o.Card.Checks {
				seen[c.ID] = true
				ran[c.ID] = ran[c.ID] || c.Result != checks.Skipped
			}
		}
	}
	var out []string
	for _, c := range checks.ContractChecks() {
		if c.Webhook && !ran[c.ID] {
			// a document's operations are an API's, not webhook
			// receivers: a column no operation ran is noise
			delete(seen, c.ID)
			continue
		}
		if seen[c.ID] {
			out = append(out, c.ID)
			delete(seen, c.ID)
		}
	}
	// checks outside the contract (OA: the document's responses) last
	for _, o := range a.Operations {
		if o.Card != nil {
			for _, c := range o.Card.Checks {
				if seen[c.ID] {
					out = append(out, c.ID)
					delete(seen, c.ID)
				}
			}
		}
	}
	return out
}

// cell is one check's result as one character: . passed, X failed at the
// failing severity, x failed below it, ? unknown, - skipped or not run.
func cell(card *checks.Scorecard, id string) string {
	if card == nil {
		return " "
	}
	for _, c := range card.Checks {
		if c.ID != id {
			continue
		}
		switch {
		case c.Failed(card.FailOn):
			return "X"
		case c.Result == checks.Fail:
			return "x"
		case c.Result == checks.Pass:
			return "."
		case c.Result == checks.Unknown:
			return "?"
		}
		return "-"
	}
	return "-"
}

const apiLegend = ". passed  X failed  x failed below the failing severity  ? unknown  - skipped"

func opResult(o checks.OperationCard) string {
	if o.Card == nil {
		return "not audited"
	}
	return string(o.Card.Result)
}

func writeAPIText(w io.Writer, a *checks.APIScorecard) error {
	var b strings.Builder
	termsafe.Fprintf(&b, "audit --openapi %s on %s (profile %s): %d operations, %d requests\n\n", a.Spec, a.Target, a.Profile, len(a.Operations), a.Requests)
	cols := apiColumns(a)
	tw := tabwriter.NewWriter(&b, 0, 4, 1, ' ', 0)
	fmt.Fprint(tw, "OPERATION\tRESULT\t")
	for _, id := range cols {
		fmt.Fprintf(tw, "%s\t", strings.TrimPrefix(id, "C"))
	}
	fmt.Fprintln(tw)
	for _, o := range a.Operations {
		termsafe.Fprintf(tw, "%s\t%s\t", o.Operation, opResult(o))
		for _, id := range cols {
			fmt.Fprintf(tw, "%s\t", cell(o.Card, id))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(&b, "(%s; columns are checks C01…, OA the document's declared responses)\n", apiLegend)
	for _, o := range a.Operations {
		if o.Card == nil {
			termsafe.Fprintf(&b, "\n%s: not audited: %s\n", o.Operation, o.Error)
			continue
		}
		for _, c := range o.Card.Checks {
			if c.Result != checks.Fail {
				continue
			}
			termsafe.Fprintf(&b, "\n%s: %s %s (%s): %s\n", o.Operation, c.ID, c.Name, c.Severity, c.Summary)
			for i, e := range c.Evidence {
				if i == 6 {
					termsafe.Fprintf(&b, "  … %d more in --format json\n", len(c.Evidence)-i)
					break
				}
				termsafe.Fprintf(&b, "  %s\n", evidenceLine(e))
			}
		}
	}
	if len(a.Skipped) > 0 {
		fmt.Fprintf(&b, "\nleft out by the plan (%d):\n", len(a.Skipped))
		for _, s := range a.Skipped {
			termsafe.Fprintf(&b, "  %s: %s%s\n", s.Operation, s.Reason, at(s.Pointer))
		}
	}
	termsafe.Fprintf(&b, "\nresult: %s: %s\n", strings.ToUpper(string(a.Result)), a.Why)
	_, err := io.WriteString(w, b.String())
	return err
}

func at(ptr string) string {
	if ptr == "" {
		return ""
	}
	return " [" + ptr + "]"
}

func writeAPIMarkdown(w io.Writer, a *checks.APIScorecard) error {
	var b strings.Builder
	termsafe.Fprintf(&b, "### idemcheck audit --openapi: %s\n\n", a.Result)
	termsafe.Fprintf(&b, "`%s` on `%s` · profile `%s` · %d operations · %d requests · %s\n\n", md(a.Spec), md(a.Target), a.Profile, len(a.Operations), a.Requests, md(a.Why))
	cols := apiColumns(a)
	b.WriteString("| Operation | Result |")
	for _, id := range cols {
		b.WriteString(" " + id + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(cols)) + "\n")
	for _, o := range a.Operations {
		res := opResult(o)
		if o.Result() == checks.NotMet {
			res = "**" + res + "**"
		}
		termsafe.Fprintf(&b, "| %s | %s |", md(o.Operation), res)
		for _, id := range cols {
			c := cell(o.Card, id)
			if c == "X" {
				c = "**X**"
			}
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n" + md(apiLegend) + "\n")
	for _, o := range a.Operations {
		if o.Card == nil {
			termsafe.Fprintf(&b, "\n**%s**: not audited: %s\n", md(o.Operation), md(o.Error))
			continue
		}
		for _, c := range o.Card.Checks {
			if c.Result != checks.Fail {
				continue
			}
			termsafe.Fprintf(&b, "\n<details><summary>%s: %s %s (%s): %s</summary>\n\n```\n", md(o.Operation), c.ID, c.Name, c.Severity, md(c.Summary))
			for _, e := range c.Evidence {
				b.WriteString(termsafe.String(strings.ReplaceAll(evidenceLine(e), "```", "'''")) + "\n")
			}
			b.WriteString("```\n</details>\n")
		}
	}
	if len(a.Skipped) > 0 {
		fmt.Fprintf(&b, "\n<details><summary>%d operations left out by the plan</summary>\n\n", len(a.Skipped))
		for _, s := range a.Skipped {
			termsafe.Fprintf(&b, "- %s: %s%s\n", md(s.Operation), md(s.Reason), md(at(s.Pointer)))
		}
		b.WriteString("</details>\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeAPIJUnit(w io.Writer, a *checks.APIScorecard, unknownFails bool) error {
	doc := junitSuites{Name: "idemcheck audit --openapi", Time: "0.000"}
	add := func(s junitSuite) {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Suites = append(doc.Suites, s)
	}
	for _, o := range a.Operations {
		class := "idemcheck.audit." + junitClass(o)
		if o.Card == nil {
			s := junitSuite{Name: "idemcheck audit " + o.Operation, Time: "0.000", Tests: 1, Errors: 1,
				Cases: []junitCase{{Name: "audit", Classname: class, Time: "0.000", Error: &junitMessage{Message: "not audited: " + o.Error, Type: "not-audited"}}}}
			if unknownFails {
				s.Errors, s.Failures = 0, 1
				s.Cases[0].Failure, s.Cases[0].Error = s.Cases[0].Error, nil
			}
			add(s)
			continue
		}
		s := scorecardSuite(o.Card, nil, unknownFails, class)
		s.Name = "idemcheck audit " + o.Operation
		s.Properties = append(s.Properties, junitProperty{"pointer", o.Pointer})
		add(s)
	}
	if len(a.Skipped) > 0 {
		s := junitSuite{Name: "idemcheck audit: left out by the plan", Time: "0.000"}
		for _, sk := range a.Skipped {
			s.Cases = append(s.Cases, junitCase{Name: sk.Operation, Classname: "idemcheck.audit.plan", Time: "0.000", Skipped: &junitSkipped{Message: sk.Reason + at(sk.Pointer)}})
			s.Tests++
			s.Skipped++
		}
		add(s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitClass is an operation as a JUnit class name part: its
// operationId, else its method and path with only word characters.
func junitClass(o checks.OperationCard) string {
	name := o.Operation
	if i := strings.Index(name, " ("); i > 0 {
		name = name[:i]
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, name)
}

type apiRow struct {
	Op     checks.OperationCard
	Result string
	Cells  []string
	Failed []checks.ContractCheck
}

func apiView(a *checks.APIScorecard) any {
	cols := apiColumns(a)
	var rows []apiRow
	for _, o := range a.Operations {
		r := apiRow{Op: o, Result: opResult(o)}
		for _, id := range cols {
			r.Cells = append(r.Cells, cell(o.Card, id))
		}
		if o.Card != nil {
			r.Failed = slices.DeleteFunc(slices.Clone(o.Card.Checks), func(c checks.ContractCheck) bool { return c.Result != checks.Fail })
		}
		rows = append(rows, r)
	}
	return struct {
		A      *checks.APIScorecard
		Cols   []string
		Rows   []apiRow
		Legend string
	}{a, cols, rows, apiLegend}
}

var apiHTML = template.Must(template.New("api").Funcs(template.FuncMap{
	"evidence": evidenceLine,
	"class": func(c string) string {
		return map[string]string{".": "pass", "X": "fail", "x": "low", "?": "unknown", "-": "skip"}[c]
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>idemcheck audit --openapi: {{.A.Result}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:center}
td.op{text-align:left}.pass{background:#d9f2d9}.fail{background:#f4b6b6;font-weight:bold}.low{background:#fbe3b0}
.unknown{background:#e6e6e6}.skip{color:#999}.not_met{color:#b00;font-weight:bold}.met{color:#070}
pre{background:#f6f6f6;padding:.5em;overflow-x:auto}
</style></head><body>
<h1>idemcheck audit --openapi: <span class="{{.A.Result}}">{{.A.Result}}</span></h1>
<p><code>{{.A.Spec}}</code> on <code>{{.A.Target}}</code> · profile {{.A.Profile}} · {{len .A.Operations}} operations · {{.A.Requests}} requests</p>
<p>{{.A.Why}}</p>
<table><tr><th>Operation</th><th>Result</th>{{range .Cols}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td class="op">{{.Op.Operation}}</td><td class="{{.Result}}">{{.Result}}</td>{{range .Cells}}<td class="{{class .}}">{{.}}</td>{{end}}</tr>
{{end}}</table>
<p>{{.Legend}}</p>
{{range .Rows}}{{$op := .Op}}{{if not .Op.Card}}<h3>{{.Op.Operation}}: not audited</h3><p>{{.Op.Error}}</p>{{end}}{{range .Failed}}
<h3>{{$op.Operation}}: {{.ID}} {{.Name}} ({{.Severity}})</h3><p>{{.Summary}}</p>
<pre>{{range .Evidence}}{{evidence .}}
{{end}}</pre>{{end}}{{end}}
{{if .A.Skipped}}<h2>Left out by the plan</h2><ul>{{range .A.Skipped}}<li>{{.Operation}}: {{.Reason}}{{if .Pointer}} <code>{{.Pointer}}</code>{{end}}</li>{{end}}</ul>{{end}}
</body></html>
`))
