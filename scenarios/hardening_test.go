package scenarios

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// A template that never ends, or that grows a string without bound, fails
// with ErrRenderLimit within a bounded time and memory instead of holding
// its worker.
func TestRenderLimits(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"endless range", `{{range 100000000000000}}{{end}}`},
		{"nested ranges", `{{range 100000}}{{range 100000}}{{end}}{{end}}`},
		{"huge output", `{{range 100000000}}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{end}}`},
		{"doubling string", `{{$s := "xxxxxxxxxxxxxxxx"}}{{range 64}}{{$s = printf "%s%s" $s $s}}{{end}}{{len $s}}`},
		{"doubling through html", `{{$s := "<<<<<<<<"}}{{range 64}}{{$s = html $s $s}}{{end}}{{len $s}}`},
		{"recursive template", `{{define "a"}}{{template "a" .}}{{template "a" .}}{{end}}{{template "a" .}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := NewText("operation.body", tc.text, nil)
			if err != nil {
				t.Fatalf("NewText(%q) = %v", tc.text, err)
			}
			start := time.Now()
			out, err := x.Render(context.Background(), Vars{})
			if took := time.Since(start); took > testenv.Bound(5*time.Second) {
				t.Errorf("Render(%q) took %v, want a bounded time", tc.text, took)
			}
			if err == nil {
				t.Fatalf("Render(%q) = %d bytes, nil error; want a limit error", tc.text, len(out))
			}
			if tc.name != "recursive template" && !errors.Is(err, ErrRenderLimit) {
				t.Errorf("Render(%q) = %v, want ErrRenderLimit", tc.text, err)
			}
		})
	}
	// An ordinary loop renders.
	x, _ := NewText("operation.body", `[{{range $i := 1000}}{{if $i}},{{end}}{{$i}}{{end}}]`, nil)
	if out, err := x.Render(context.Background(), Vars{}); err != nil || !strings.HasSuffix(out, ",999]") {
		t.Errorf("Render(range 1000) = %.40q…, %v; want the list", out, err)
	}
}

// A render stops when its context ends, as a Ctrl-C ends it.
func TestRenderCancelled(t *testing.T) {
	x, err := NewText("operation.body", `{{range 100000000000000}}{{end}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := x.Render(ctx, Vars{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Render with a cancelled context = %v, want context.Canceled", err)
	}
}

// A scenario with an endless template is a diagnostic at load, found
// within a bounded time.
func TestEndlessTemplateIsDiagnostic(t *testing.T) {
	src := strings.Replace(valid, `body: '{"amount":1}'`, `body: '{"amount":1{{range 100000000000000}}{{end}}}'`, 1)
	start := time.Now()
	ds := diagnose(t, src)
	if took := time.Since(start); took > testenv.Bound(5*time.Second) {
		t.Errorf("Parse took %v", took)
	}
	if !strings.Contains(ds.Error(), "render limit") {
		t.Errorf("Parse = %v, want a render limit diagnostic", ds)
	}
}

// retry.attempts: 2.5 is an error, not 2; 1e1 is a whole number.
func TestWholeNumbers(t *testing.T) {
	ds := diagnose(t, valid+"retry: {attempts: 2.5}\n")
	if !strings.Contains(ds.Error(), "retry.attempts: want a whole number") {
		t.Errorf("attempts 2.5: %v, want a whole number diagnostic", ds)
	}
	ds = diagnose(t, strings.Replace(valid, "ops: 10", "ops: 10.5", 1))
	if !strings.Contains(ds.Error(), "load.ops: want a whole number") {
		t.Errorf("ops 10.5: %v, want a whole number diagnostic", ds)
	}
	s, err := Parse("t.yaml", []byte(valid+"retry: {attempts: 1e1}\n"))
	if err != nil || s.Retry.Attempts != 10 {
		t.Errorf("attempts 1e1: %v, %v; want 10", s, err)
	}
}

// An environment variable may be a bare JSON number in a body: validation
// does not know its value, and does not refuse it.
func TestEnvBareNumber(t *testing.T) {
	src := strings.Replace(valid, `body: '{"amount":1}'`, `body: '{"amount":{{env "AMOUNT"}}}'`, 1)
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse(amount from env) = %v", err)
	}
	getenv := func(string) string { return "250" }
	if ds := s.MissingEnv(getenv); ds != nil {
		t.Errorf("MissingEnv = %v", ds)
	}
	tm, err := NewTemplate("operation", s.Operation.Request, "POST", getenv)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tm.Body(context.Background(), Vars{})
	if err != nil || string(b) != `{"amount":250}` {
		t.Errorf("Body = %s, %v; want {\"amount\":250}", b, err)
	}
}

// A header value with a line break, written in the file or read from the
// environment, is a configuration error before any request.
func TestHeaderLineBreak(t *testing.T) {
	ds := diagnose(t, strings.Replace(valid, "key: {header: Idempotency-Key}", "key: {header: Idempotency-Key}\n  headers: {X-Token: \"a\\r\\nb\"}", 1))
	if !strings.Contains(ds.Error(), "operation.headers.X-Token") || !strings.Contains(ds.Error(), "line break") {
		t.Errorf("a CRLF in a header: %v", ds)
	}
	src := strings.Replace(valid, "key: {header: Idempotency-Key}", "key: {header: Idempotency-Key}\n  headers: {Authorization: 'Bearer {{env \"TOKEN\"}}'}", 1)
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if ds := s.BadHeaders(func(string) string { return "tok\r\nX-Evil: 1" }); len(ds) != 1 || ds[0].Field != "operation.headers.Authorization" {
		t.Errorf("BadHeaders(token with CRLF) = %v, want one at operation.headers.Authorization", ds)
	}
	if ds := s.BadHeaders(func(string) string { return "tok" }); ds != nil {
		t.Errorf("BadHeaders(tok) = %v, want none", ds)
	}
}

// A bad target never echoes its secrets; a port out of range is refused.
func TestTargetErrors(t *testing.T) {
	const secret = "Tg7Secret"
	s := &Scenario{Name: "t"}
	for _, tc := range []struct{ raw, want string }{
		{"http://u:" + secret + "@h/?token=" + secret, "query"},
		{"http://u:p%zz" + secret + "@h/", "bad target URL"},
		{"ftp://u:" + secret + "@h/", "not an http"},
		{"http://h:99999", "out of range"},
		{"http://h:0", "out of range"},
		{"http://[::1%en0" + secret + "]/", "bad target URL"},
		{"127.0.0.1:8080", "target 127.0.0.1:8080 has no scheme"},
		{"localhost:8080", "target localhost:8080 has no scheme"},
		{"127.0.0.1:1/tenant-" + secret + "/api", "target 127.0.0.1:1/… has no scheme"},
		{"u:" + secret + "@localhost:8080/x?token=" + secret, "has no scheme"},
	} {
		_, err := s.TargetURLs([]string{tc.raw})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("TargetURLs(%q) = %v, want an error saying %q", tc.raw, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("TargetURLs(%q) = %v shows the secret", tc.raw, err)
		}
	}
	if _, err := s.TargetURLs([]string{"http://u:p@h:65535/api"}); err != nil {
		t.Errorf("TargetURLs(port 65535) = %v", err)
	}
}

// A scenario "file" that never ends is refused after MaxFileSize bytes.
func TestLoadFileEndless(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero on this system")
	}
	start := time.Now()
	_, err := LoadFile("/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("LoadFile(/dev/zero) = %v, want a too-large diagnostic", err)
	}
	if took := time.Since(start); took > testenv.Bound(10*time.Second) {
		t.Errorf("LoadFile(/dev/zero) took %v", took)
	}
}

// A FIFO nobody writes to holds a load only until its context ends.
func TestLoadFileFIFOCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := ResolveContext(ctx, path)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ResolveContext(FIFO without writer) = %v, want the context's error", err)
	}
	if took := time.Since(start); took > testenv.Bound(5*time.Second) {
		t.Errorf("ResolveContext(FIFO) took %v", took)
	}
	// A FIFO with a writer loads. (Another FIFO: the read abandoned above
	// still waits on the first one's open, and would take a writer's data.)
	path = filepath.Join(t.TempDir(), "scenario2.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	go func() {
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			w.WriteString(valid)
			w.Close()
		}
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if s, err := LoadFileContext(ctx2, path); err != nil || s.Name != "t" {
		t.Errorf("LoadFileContext(FIFO with a writer) = %v, %v", s, err)
	}
}

// FuzzRender: any template that compiles renders without panicking, within
// MaxRender, in bounded time, or fails with an error. Seeded from the
// built-in scenarios' templates and the ones that used to hang.
func FuzzRender(f *testing.F) {
	for _, name := range BuiltinNames() {
		s, err := Builtin(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, ft := range s.templates() {
			if strings.Contains(ft.text, "{{") {
				f.Add(ft.text)
			}
		}
	}
	for _, s := range []string{
		`{{range 100000000000000}}{{end}}`,
		`{{$s := "ab"}}{{range 40}}{{$s = printf "%s%s" $s $s}}{{end}}{{$s}}`,
		`{{define "a"}}{{template "a" .}}{{end}}{{template "a" .}}`,
		`{{range $i := 30}}{{range $j := 30}}{{randInt . 0 $i}}{{end}}{{end}}`,
		`{{printf "%0999999d" 1}}{{html .Key}}{{urlquery .User}}{{js .Vars}}`,
		`{{env "X" "d"}}{{uuid .}}{{mod .Seq 0}}{{div 1 0}}{{add .Seq 1}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		x, err := NewText("fuzz", text, func(string) string { return "v" })
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		out, err := x.Render(ctx, Vars{Key: "k", Seq: 3, User: "u", Attempt: 1, Vars: map[string]string{"a": "1"}})
		if took := time.Since(start); took > testenv.Bound(5*time.Second) {
			t.Fatalf("Render(%q) took %v", text, took)
		}
		if err == nil && len(out) > MaxRender {
			t.Fatalf("Render(%q) = %d bytes, more than MaxRender", text, len(out))
		}
	})
}
