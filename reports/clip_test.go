package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/history"
)

// An attempt's long error is cut at a word, with "…", in the text,
// Markdown and JUnit evidence, never in the middle of one; report.json
// and the HTML report keep it whole.
func TestEvidenceCutAtAWord(t *testing.T) {
	const full = "injected timeout: no answer (headers) within 10ms; the client gave up, the server may still be working"
	const cut = "injected timeout: no answer (headers) within 10ms; the client gave up, the…"
	s := fixture(t)
	found := false
	for i := range s.Verdicts {
		for j := range s.Verdicts[i].Examples {
			for k := range s.Verdicts[i].Examples[j].Attempts {
				a := &s.Verdicts[i].Examples[j].Attempts[k]
				if a.Outcome == history.Info {
					a.Fault, a.Err, found = "timeout", full, true
				}
			}
		}
	}
	if !found {
		t.Fatal("fixture: no indeterminate attempt among the examples")
	}
	render := func(format string) string {
		t.Helper()
		w, err := Writer(format)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := w(&b, []*Summary{s}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		return b.String()
	}
	for _, format := range []string{"text", "markdown", "junit"} {
		out := render(format)
		if format == "markdown" {
			out = strings.ReplaceAll(out, `\_`, "_")
		}
		if !strings.Contains(out, cut) {
			t.Errorf("%s report: no %q in\n%s", format, cut, out)
		}
		if strings.Contains(out, "server may") || strings.Contains(out, "gave up, the server…") {
			t.Errorf("%s report holds more than the cut error:\n%s", format, out)
		}
	}
	for _, format := range []string{"json", "html"} {
		if out := render(format); !strings.Contains(out, "the server may still be working") {
			t.Errorf("%s report: the whole error is missing:\n%s", format, out)
		}
	}
}
