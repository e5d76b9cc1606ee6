package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

// ConformanceID names the check of an operation's answers against the
// responses its document declares.
const ConformanceID = "OA"

// bodyKept is how much of an answer's body a history keeps as evidence:
// a body this long may have been cut, and is not judged.
const bodyKept = 2 << 10

// Conformance judges the answers h recorded for o against the responses
// the document declares for it: a status it does not declare (nor a
// range such as 2XX, nor default), or a JSON body its schema refuses. A
// wrong replay (an answer to a key already answered 2xx) is high; a first
// answer that strays from the document is medium.
func (s *Spec) Conformance(o Operation, h *history.History) checks.ContractCheck {
	return checks.JudgeAnswers(h, o.Method, ConformanceID, "spec-conformance", checks.High, func(a *history.Attempt, replay bool) (bool, checks.Severity, string) {
		return s.judgeAnswer(o, a, replay)
	})
}

func (s *Spec) judgeAnswer(o Operation, a *history.Attempt, replay bool) (bool, checks.Severity, string) {
	if o.op == nil || o.op.Responses == nil {
		return false, "", ""
	}
	sev, what := checks.Medium, "an answer"
	if replay && a.Acked() {
		sev, what = checks.High, "a replay"
	}
	code := strconv.Itoa(a.Status)
	resp, key := o.op.Responses.Status(a.Status), code
	if resp == nil {
		resp, key = o.op.Responses.Default(), "default"
	} else if o.op.Responses.Value(code) == nil {
		key = code[:1] + "XX"
	}
	ptr := o.Pointer + "/responses"
	if resp == nil || resp.Value == nil {
		return true, sev, fmt.Sprintf("%s was %d, which the document does not declare (%s: %s)", what, a.Status, ptr, strings.Join(o.op.Responses.Keys(), ", "))
	}
	ptr += "/" + escape(key)
	ctype := strings.ToLower(strings.TrimSpace(strings.Split(a.Headers["Content-Type"], ";")[0]))
	if len(resp.Value.Content) == 0 || a.Body == "" {
		return true, "", "" // the status is declared; no body to judge
	}
	var media *openapi3.MediaType
	mkey := ""
	// the most specific declared media range that covers the answer's
	// type: application/json, then application/*, then */*
	best := -1
	for _, ct := range sortedKeys(resp.Value.Content) {
		base := strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
		rank := -1
		switch {
		case base == ctype, ctype == "" && strings.Contains(base, "json"):
			rank = 2
		case strings.HasSuffix(base, "/*") && strings.HasPrefix(ctype, strings.TrimSuffix(base, "*")):
			rank = 1
		case base == "*/*" || base == "*":
			rank = 0
		}
		if rank > best {
			best, media, mkey = rank, resp.Value.Content[ct], ct
		}
	}
	if media == nil {
		if ctype == "" {
			return false, "", "" // no content type: nothing to hold it to
		}
		return true, sev, fmt.Sprintf("%s was %d with %s, which the document does not declare for it (%s/content: %s)", what, a.Status, ctype, ptr, strings.Join(sortedKeys(resp.Value.Content), ", "))
	}
	if media.Schema == nil || media.Schema.Value == nil || !strings.Contains(ctype, "json") && !strings.Contains(mkey, "json") {
		return true, "", ""
	}
	if a.Size > 0 || len(a.Body) >= bodyKept-8 {
		return false, "", "" // cut short: not judged
	}
	var v any
	if err := json.Unmarshal([]byte(a.Body), &v); err != nil {
		return true, sev, fmt.Sprintf("%s was %d with a body that is not JSON (%s declares %s)", what, a.Status, ptr, mkey)
	}
	opts := []openapi3.SchemaValidationOption{openapi3.VisitAsResponse()}
	if strings.HasPrefix(s.Version, "3.1") || strings.HasPrefix(s.Version, "3.2") {
		opts = append(opts, openapi3.EnableJSONSchema2020())
	}
	err := media.Schema.Value.VisitJSON(v, opts...)
	if err == nil {
		return true, "", ""
	}
	sptr := ptr + "/content/" + escape(mkey) + "/schema"
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		at := "/" + strings.Join(se.JSONPointer(), "/")
		if se.SchemaField != "" {
			sptr += " (" + se.SchemaField + ")"
		}
		return true, sev, fmt.Sprintf("%s was %d with a body the document's schema refuses at %s: %s (%s)", what, a.Status, at, reason(se.Reason), sptr)
	}
	return true, sev, fmt.Sprintf("%s was %d with a body the document's schema refuses: %s (%s)", what, a.Status, firstLine(err.Error()), sptr)
}

// reason is a schema error's reason on one line: the JSON Schema 2020
// validator's is "jsonschema validation failed with …\n- at ”: what".
func reason(r string) string {
	if i := strings.LastIndex(r, "\n- at '"); i >= 0 {
		r = r[i+len("\n- at '"):]
		if j := strings.Index(r, "': "); j >= 0 {
			r = r[j+3:]
		}
	}
	return firstLine(r)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
