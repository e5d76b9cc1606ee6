package cmd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func parseReportFlags(t *testing.T, args ...string) *reportFlags {
	t.Helper()
	var r reportFlags
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	r.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &r
}

func TestReportFlagsWriteEveryFormat(t *testing.T) {
	dir := t.TempDir()
	r := parseReportFlags(t, "--report", "junit="+filepath.Join(dir, "junit.xml"), "--report", "markdown="+filepath.Join(dir, "summary.md"),
		"--report", "HTML="+filepath.Join(dir, "report.html"), "--report", "json="+filepath.Join(dir, "report.json"))
	if err := r.resolve(); err != nil {
		t.Fatal(err)
	}
	// a run that could not start still leaves every file, saying why,
	// and no secret of the target
	cause := errors.New("target unreachable: connection refused")
	if err := r.writeNotRun("charges", "https://user:s3cret@staging.example.com/?token=abc", cause); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"junit.xml":   `<error message="could not run: target unreachable: connection refused"`,
		"summary.md":  "| ❌ | charges | could not run | target unreachable: connection refused |",
		"report.html": "could not run",
		"report.json": `"result": "error"`,
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not hold %q:\n%s", name, want, b)
		}
		if strings.Contains(string(b), "s3cret") || strings.Contains(string(b), "abc") {
			t.Errorf("%s holds the target's secret:\n%s", name, b)
		}
	}

	// a file that cannot be written is a runtime error (exit 4), after
	// trying the others
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := r.writeNotRun("charges", "", cause); exitCodeOf(err) != ExitRuntime {
		t.Errorf("write into a removed directory = %v, want exit %d", err, ExitRuntime)
	}
	// nothing asked, nothing written
	if err := parseReportFlags(t).writeNotRun("x", "", cause); err != nil {
		t.Errorf("writeNotRun without --report = %v", err)
	}
}

func TestReportFlagsRefuseBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--report", "junit"}, "want FORMAT=PATH"},
		{[]string{"--report", "=x.xml"}, "want FORMAT=PATH"},
		{[]string{"--report", "pdf=" + filepath.Join(dir, "r.pdf")}, "unknown report format"},
		{[]string{"--report", "junit=-"}, "stdout carries the --format report"},
		{[]string{"--report", "junit=" + filepath.Join(dir, "nope", "j.xml")}, "no directory"},
		{[]string{"--report", "junit=" + dir}, "is a directory"},
		{[]string{"--report", "junit=" + filepath.Join(dir, "a.xml"), "--report", "markdown=" + filepath.Join(dir, ".", "a.xml")}, "the same file"},
		{[]string{"--junit-inconclusive", "skipped"}, "want error or failure"},
	}
	for _, c := range cases {
		err := parseReportFlags(t, c.args...).resolve()
		if err == nil || exitCodeOf(err) != ExitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resolve(%v) = %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
}

func TestReportFlagsStdout(t *testing.T) {
	r := parseReportFlags(t, "--junit-inconclusive", "failure")
	if err := r.resolve(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.writer("junit"); err != nil {
		t.Errorf("writer(junit) = %v", err)
	}
	if _, err := r.writer("pdf"); err == nil {
		t.Error("writer(pdf) = nil error")
	}
}
