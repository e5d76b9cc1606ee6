package scenarios

import (
	"errors"
	"strings"
	"testing"
)

// A bad argument is an *ArgError with a hint, and never quotes a secret.
func TestParseOperationRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args OperationArgs
		want string
	}{
		{OperationArgs{Method: "FETCH", URL: "https://x.example.com/c"}, "not an HTTP method"},
		{OperationArgs{Method: "POST", URL: "ftp://u:hunter2@x.example.com/c"}, "not an http(s) URL"},
		{OperationArgs{Method: "POST", URL: "https://x.example.com/c", KeyHeader: "K", KeyField: "k"}, "both set"},
		{OperationArgs{Method: "POST", URL: "https://x.example.com/c", Headers: []string{"Bearer hunter2"}}, "want 'Name: value'"},
	}
	for _, c := range cases {
		_, err := ParseOperation(c.args)
		var ae *ArgError
		if !errors.As(err, &ae) || ae.Hint() == "" || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%+v: %v, want an ArgError with a hint saying %q and no secret", c.args, err, c.want)
		}
	}
}

func TestEffectsPath(t *testing.T) {
	t.Parallel()
	op, err := ParseOperation(OperationArgs{Method: "post", URL: "https://x.example.com/c?a=1"})
	if err != nil || op.Method != "POST" || op.Path != "/c?a=1" || op.Key.Header != "Idempotency-Key" {
		t.Fatalf("ParseOperation: %+v, %v", op, err)
	}
	cases := []struct{ raw, method, path, err string }{
		{"", "", "", ""},
		{"GET /n?k={{.Key}}", "", "/n?k={{.Key}}", ""},
		{"POST /n?k={{.Key}}", "POST", "/n?k={{.Key}}", ""},
		{"https://u:pw@x.example.com/n?k={{.Key}}", "", "/n?k={{.Key}}", ""},
		{"/n", "", "", "does not use {{.Key}}"},
		{"https://admin:hunter2@other.example.com/n?k={{.Key}}", "", "", "the operation on"},
		{"ftp://x.example.com/n?k={{.Key}}", "", "", "want a path or an http(s) URL"},
	}
	for _, c := range cases {
		m, p, err := op.EffectsPath(c.raw)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%q: %v, want %q", c.raw, err, c.err)
			}
			continue
		}
		if err != nil || m != c.method || p != c.path {
			t.Errorf("%q: %q %q %v, want %q %q", c.raw, m, p, err, c.method, c.path)
		}
	}
}
