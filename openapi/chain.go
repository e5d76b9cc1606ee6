package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Chain is a path parameter taken from another operation's answer, as a
// link of the document says: create a customer, then charge it.
type Chain struct {
	// Param is the path parameter it fills.
	Param string
	// From is the operation sent once for the answer: planned as any
	// other, its key (if it declares one) fresh.
	From Operation
	// Expr is the link's runtime expression: "$response.body#/id" or
	// "$response.header.Location".
	Expr string
	// Link names the link; Pointer is its JSON pointer.
	Link, Pointer string
}

// hasExample reports whether pr gives a value of its own.
func hasExample(pr *openapi3.Parameter) bool {
	if pr.Example != nil || len(pr.Examples) > 0 {
		return true
	}
	if pr.Schema != nil && pr.Schema.Value != nil {
		sc := pr.Schema.Value
		return sc.Example != nil || len(sc.Examples) > 0 || sc.Default != nil || len(sc.Enum) > 0 || sc.Const != nil
	}
	return false
}

// chainInto finds a link, in a 2xx answer of another operation, to op
// that gives its path parameter param from that answer, and plans the
// operation it is on; nil when there is none (or it cannot be planned).
func (s *Spec) chainInto(o PlanOptions, op *openapi3.Operation, param string) *Chain {
	for _, path := range sortedKeys(s.Doc.Paths.Map()) {
		item := s.Doc.Paths.Value(path)
		for _, m := range Methods {
			src := item.GetOperation(strings.ToUpper(m))
			if src == nil || src == op || src.Responses == nil {
				continue
			}
			for _, code := range sortedKeys(src.Responses.Map()) {
				resp := src.Responses.Value(code)
				if !strings.HasPrefix(code, "2") || resp == nil || resp.Value == nil {
					continue
				}
				for _, lname := range sortedKeys(resp.Value.Links) {
					l := resp.Value.Links[lname]
					if l == nil || l.Value == nil {
						continue
					}
					if _, _, target := s.linkTarget(l.Value); target != op {
						continue
					}
					expr := ""
					for k, v := range l.Value.Parameters {
						e, _ := v.(string)
						if (k == param || k == "path."+param) && (strings.HasPrefix(e, "$response.body#") || strings.HasPrefix(e, "$response.header.")) {
							expr = e
						}
					}
					if expr == "" {
						continue
					}
					ptr := "#/paths/" + escape(path) + "/" + m
					from, gerr := s.planOp(o, item, src, strings.ToUpper(m), path, ptr, o.Fixtures.For(src.OperationID, strings.ToUpper(m), path), true)
					if gerr != nil || len(from.Chains) > 0 {
						continue
					}
					return &Chain{Param: param, From: *from, Expr: expr, Link: lname, Pointer: ptr + "/responses/" + escape(code) + "/links/" + escape(lname)}
				}
			}
		}
	}
	return nil
}

// Value is the parameter's value in the source's answer.
func (c Chain) Value(status int, header http.Header, body []byte) (string, error) {
	if status/100 != 2 {
		return "", fmt.Errorf("%s was answered %d, not 2xx: no %s to take {%s} from", c.From.Name(), status, c.Expr, c.Param)
	}
	if h, ok := strings.CutPrefix(c.Expr, "$response.header."); ok {
		if v := header.Get(h); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("%s's answer has no %s header for {%s}", c.From.Name(), h, c.Param)
	}
	frag := strings.TrimPrefix(c.Expr, "$response.body#")
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("%s's answer is not JSON: no %s for {%s}", c.From.Name(), c.Expr, c.Param)
	}
	got, ok := pointTo(v, frag)
	if !ok || got == nil {
		return "", fmt.Errorf("%s's answer has nothing at %s for {%s}", c.From.Name(), c.Expr, c.Param)
	}
	switch t := got.(type) {
	case string:
		return t, nil
	case float64, bool:
		return fmt.Sprint(t), nil
	}
	return "", fmt.Errorf("%s's answer has an object at %s, not a value for {%s}", c.From.Name(), c.Expr, c.Param)
}
