// Package ci_test checks the CI examples and the Dockerfile: their
// structure, and that the idemcheck commands they run are valid and do
// what they say when run against the built-in lab.
package ci_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// workflow is the part of a GitHub Actions workflow the test reads.
type workflow struct {
	On   map[string]any    `yaml:"on"`
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		RunsOn  string            `yaml:"runs-on"`
		Timeout int               `yaml:"timeout-minutes"`
		Env     map[string]string `yaml:"env"`
		Steps   []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			If   string            `yaml:"if"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// gitlabJob is the part of a GitLab CI job the test reads.
type gitlabJob struct {
	Stage     string            `yaml:"stage"`
	Image     string            `yaml:"image"`
	Variables map[string]string `yaml:"variables"`
	Script    []string          `yaml:"script"`
	Artifacts struct {
		When    string            `yaml:"when"`
		Paths   []string          `yaml:"paths"`
		Reports map[string]string `yaml:"reports"`
	} `yaml:"artifacts"`
}

func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func readWorkflow(t *testing.T) workflow {
	var w workflow
	decodeStrict(t, "github-actions.yml", &w)
	return w
}

func readGitLab(t *testing.T) gitlabJob {
	var doc map[string]gitlabJob
	decodeStrict(t, "gitlab-ci.yml", &doc)
	job, ok := doc["idemcheck"]
	if !ok {
		t.Fatalf("gitlab-ci.yml has no idemcheck job: %v", doc)
	}
	return job
}

func TestGitHubWorkflowShape(t *testing.T) {
	w := readWorkflow(t)
	job, ok := w.Jobs["idemcheck"]
	if !ok || job.RunsOn == "" || job.Timeout == 0 {
		t.Fatalf("workflow: want an idemcheck job with runs-on and timeout-minutes, got %+v", w.Jobs)
	}
	for _, ev := range []string{"pull_request", "push", "workflow_dispatch"} {
		if _, ok := w.On[ev]; !ok {
			t.Errorf("workflow does not run on %s", ev)
		}
	}
	var summary, upload bool
	for _, s := range job.Steps {
		if strings.Contains(s.Run, `--report markdown="$GITHUB_STEP_SUMMARY"`) {
			summary = true
		}
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			upload = true
			if s.If != "${{ !cancelled() }}" || !strings.Contains(s.With["path"], "junit.xml") || !strings.Contains(s.With["path"], "report.html") {
				t.Errorf("upload step %+v: want it to run after a failure too and to keep junit.xml and report.html", s)
			}
		}
	}
	// idemcheck is built from a pinned checkout of its own repository:
	// never an unresolvable (or moving) go install …@latest.
	var checkout, build, publish bool
	for _, s := range job.Steps {
		if strings.Contains(s.Run, "@latest") {
			t.Errorf("step %q installs @latest: pin a tag or a commit", s.Name)
		}
		if strings.HasPrefix(s.Uses, "actions/checkout@") && s.With["repository"] == "${{ env.IDEMCHECK_REPO }}" && s.With["ref"] == "${{ env.IDEMCHECK_REF }}" {
			checkout = true
		}
		if strings.Contains(s.Run, "go build -C .idemcheck") && strings.Contains(s.Run, "-X "+modulePath(t)+"/cmd.Version=") {
			build = true
		}
		if strings.HasPrefix(s.Uses, "mikepenz/action-junit-report@") {
			publish = s.If == "${{ !cancelled() }}" && s.With["report_paths"] == "junit.xml"
		}
	}
	if !checkout || !build {
		t.Errorf("workflow: pinned checkout %v, built from it %v; want both", checkout, build)
	}
	if !publish {
		t.Errorf("workflow: the JUnit report is not published (a reporter action on junit.xml, after a failure too): GitHub reads no JUnit by itself")
	}
	if ref := w.Env["IDEMCHECK_REF"]; ref == "" || w.Env["IDEMCHECK_REPO"] != "idemcheck/idemcheck" {
		t.Errorf("workflow env %v: want IDEMCHECK_REPO and IDEMCHECK_REF", w.Env)
	}
	if !strings.Contains(job.Env["SCENARIOS"], "scenarios/*.yaml") {
		t.Errorf("workflow: a dispatch with a target runs %q, want the team's own scenarios/*.yaml", job.Env["SCENARIOS"])
	}
	if !summary || !upload {
		t.Errorf("workflow: job summary written %v, reports uploaded %v; want both", summary, upload)
	}
}

func modulePath(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod names no module")
	}
	return string(m[1])
}

func TestGitLabJobShape(t *testing.T) {
	job := readGitLab(t)
	if !strings.HasPrefix(job.Script[0], `git clone --quiet "$IDEMCHECK_REPO" .idemcheck`) || !strings.Contains(job.Script[0], `checkout --quiet "$IDEMCHECK_REF"`) ||
		!strings.Contains(job.Script[1], "go build -C .idemcheck") || job.Variables["IDEMCHECK_REF"] == "" {
		t.Errorf("script %q: want idemcheck built from a checkout of IDEMCHECK_REPO at IDEMCHECK_REF", job.Script[:2])
	}
	for _, l := range job.Script {
		if strings.Contains(l, "@latest") {
			t.Errorf("script line %q installs @latest: pin a tag or a commit", l)
		}
	}
	if !strings.Contains(strings.Join(job.Script, "\n"), `SCENARIOS="scenarios/*.yaml"`) {
		t.Errorf("with a target, the job does not run the team's own scenarios/*.yaml")
	}
	if job.Stage == "" || !strings.HasPrefix(job.Image, "golang:") || len(job.Script) == 0 {
		t.Errorf("job: stage %q, image %q, %d script lines", job.Stage, job.Image, len(job.Script))
	}
	if job.Artifacts.When != "always" || job.Artifacts.Reports["junit"] != "junit.xml" {
		t.Errorf("artifacts: when %q, reports %v; want always and junit: junit.xml", job.Artifacts.When, job.Artifacts.Reports)
	}
	for _, p := range []string{"junit.xml", "summary.md", "report.html"} {
		found := false
		for _, q := range job.Artifacts.Paths {
			found = found || q == p
		}
		if !found {
			t.Errorf("artifacts do not keep %s: %v", p, job.Artifacts.Paths)
		}
	}
}

// command is one idemcheck command line of an example.
type command struct {
	file       string
	args       []string
	background bool
}

// commands lists the idemcheck commands in shell scripts, with
// continuation lines joined and the variables in env expanded.
func commands(file string, scripts []string, env map[string]string) ([]command, error) {
	var out []command
	for _, s := range scripts {
		s = strings.ReplaceAll(s, "\\\n", " ")
		sc := bufio.NewScanner(strings.NewReader(s))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if !strings.HasPrefix(line, "idemcheck ") {
				continue
			}
			c := command{file: file}
			if strings.HasSuffix(line, "&") {
				c.background, line = true, strings.TrimSpace(strings.TrimSuffix(line, "&"))
			}
			words, err := shellWords(line, env)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", file, line, err)
			}
			c.args = words[1:]
			out = append(out, c)
		}
	}
	return out, nil
}

var shellVar = regexp.MustCompile(`\$(\w+|\{\w+\})`)

// shellWords splits a command line as a POSIX shell would for the plain
// commands of the examples: words, single and double quotes, $VAR.
func shellWords(line string, env map[string]string) ([]string, error) {
	expand := func(s string) string {
		return shellVar.ReplaceAllStringFunc(s, func(v string) string {
			return env[strings.Trim(v, "${}")]
		})
	}
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; ch {
		case ' ', '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed '")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i, inWord = i+1+j, true
		case '"':
			j := strings.IndexByte(line[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf(`unclosed "`)
			}
			cur.WriteString(expand(line[i+1 : i+1+j]))
			i, inWord = i+1+j, true
		case ';', '|', '>', '<', '`':
			return nil, fmt.Errorf("shell syntax %q in an idemcheck line", ch)
		default:
			j := i
			for j < len(line) && !strings.ContainsRune(" \t'\"", rune(line[j])) {
				j++
			}
			// an unquoted expansion is split on blanks, as a shell does
			fields := strings.Split(expand(line[i:j]), " ")
			for k, f := range fields {
				if k > 0 && inWord {
					words, inWord = append(words, cur.String()), false
					cur.Reset()
				}
				if f != "" {
					cur.WriteString(f)
					inWord = true
				}
			}
			i = j - 1
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// exampleCommands are every idemcheck command the two examples run, with
// the lab's address replaced by addr and the job summary at summary.
func exampleCommands(t *testing.T, addr, summary string) (github, gitlab []command) {
	t.Helper()
	w := readWorkflow(t)
	var scripts []string
	for _, s := range w.Jobs["idemcheck"].Steps {
		scripts = append(scripts, strings.ReplaceAll(s.Run, "127.0.0.1:8080", addr))
	}
	builtins := "charges-lost-ack charges-lost-ack-naive" // no target: the lab's built-ins
	github, err := commands("github-actions.yml", scripts, map[string]string{"GITHUB_STEP_SUMMARY": summary, "SCENARIOS": builtins})
	if err != nil {
		t.Fatal(err)
	}
	job := readGitLab(t)
	gitlab, err = commands("gitlab-ci.yml", job.Script, map[string]string{"LAB_ADDR": addr, "SCENARIOS": builtins})
	if err != nil {
		t.Fatal(err)
	}
	if len(github) != 2 || len(gitlab) != 2 || !github[0].background || !gitlab[0].background {
		t.Fatalf("found %d idemcheck commands in the workflow, %d in the GitLab job; want the lab in the background, then a run: %v %v", len(github), len(gitlab), github, gitlab)
	}
	return github, gitlab
}

func TestCommandsSplit(t *testing.T) {
	got, err := shellWords(`idemcheck run $L a --report markdown="$S" --x 'y z' "$NOPE"b`, map[string]string{"S": "/tmp/s.md", "L": "p q"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"idemcheck", "run", "p", "q", "a", "--report", "markdown=/tmp/s.md", "--x", "y z", "b"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("shellWords = %q, want %q", got, want)
	}
}

// TestExampleCommandsRun runs what each example runs, as it runs it: the
// lab in the background, then one run that writes junit.xml, the Markdown
// summary and report.html, each read back.
func TestExampleCommandsRun(t *testing.T) {
	testenv.SkipUnlessLong(t)
	// The examples run the built binary, and so does this test: it builds
	// it as they do (the fast suite does not link cmd into this package).
	bin := buildIdemcheck(t)
	for _, which := range []string{"github", "gitlab"} {
		t.Run(which, func(t *testing.T) {
			dir := t.TempDir()
			addr := freeAddr(t)
			summary := filepath.Join(dir, "step_summary.md")
			gh, gl := exampleCommands(t, addr, summary)
			cmds, summaryFile := gh, summary
			env := []string{"IDEMCHECK_TARGET=http://" + addr, "HOME=" + dir, "TMPDIR=" + dir, "PATH=" + os.Getenv("PATH")}
			if which == "gitlab" {
				cmds, summaryFile = gl, filepath.Join(dir, "summary.md")
			}
			for _, c := range cmds {
				var out, errb bytes.Buffer
				// the examples write their reports in the working directory
				x := exec.Command(bin, c.args...)
				x.Dir, x.Env, x.Stdout, x.Stderr = dir, env, &out, &errb
				if c.background {
					if err := x.Start(); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { stopLab(t, x, &errb) })
					waitListening(t, addr)
					continue
				}
				if err := x.Run(); err != nil {
					t.Fatalf("%s: idemcheck %s: %v\nstdout:\n%s\nstderr:\n%s", c.file, strings.Join(c.args, " "), err, out.String(), errb.String())
				}
			}
			checkJUnit(t, filepath.Join(dir, "junit.xml"))
			md, err := os.ReadFile(summaryFile)
			if err != nil || !strings.Contains(string(md), "All 2 scenarios passed") {
				t.Errorf("job summary %s: %v\n%s", summaryFile, err, md)
			}
			page, err := os.ReadFile(filepath.Join(dir, "report.html"))
			if err != nil || strings.Count(string(page), `class="chart latency-chart"`) != 2 {
				t.Errorf("report.html: %v, want a latency chart per scenario", err)
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "idemcheck-out", "*", "history.jsonl")); len(m) != 2 {
				t.Errorf("idemcheck-out holds %d saved runs, want 2", len(m))
			}
		})
	}
}

// buildIdemcheck builds the module's binary into a temporary directory.
func buildIdemcheck(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "idemcheck")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, goBin, "build", "-o", bin, ".")
	c.Dir = filepath.Join("..", "..")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// stopLab interrupts the lab in the background, as Ctrl-C does, and
// waits for it to end.
func stopLab(t *testing.T, x *exec.Cmd, errb *bytes.Buffer) {
	_ = x.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- x.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = x.Process.Kill()
		<-done
		t.Errorf("the lab did not stop on an interrupt\n%s", errb.String())
	}
}

func checkJUnit(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
	}
	if err := xml.Unmarshal(b, &s); err != nil || s.Tests == 0 || s.Failures+s.Errors != 0 {
		t.Errorf("junit.xml: %v, tests %d failures %d errors %d; want every case passing", err, s.Tests, s.Failures, s.Errors)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the lab is not listening on %s", addr)
}

// TestDockerfile parses the Dockerfile (no daemon here to build it): a Go
// build stage at least as new as go.mod asks, a static binary
// (CGO_ENABLED=0) stamped with its version, and a distroless final stage
// that runs that binary as a non-root user.
func TestDockerfile(t *testing.T) {
	ins := dockerInstructions(t, filepath.Join("..", "..", "Dockerfile"))
	var froms []string
	var build, copyFrom, entry, user string
	for _, in := range ins {
		switch in.op {
		case "FROM":
			froms = append(froms, in.args)
		case "RUN":
			if strings.Contains(in.args, "go build") {
				build = in.args
			}
		case "COPY":
			if strings.HasPrefix(in.args, "--from=") {
				copyFrom = in.args
			}
		case "ENTRYPOINT":
			entry = in.args
		case "USER":
			user = in.args
		}
	}
	if len(froms) != 2 || !strings.HasPrefix(froms[0], "golang:") || !strings.HasSuffix(froms[0], " AS build") {
		t.Fatalf("stages %q: want a golang build stage named build, then the image", froms)
	}
	if !strings.HasPrefix(froms[1], "gcr.io/distroless/static") {
		t.Errorf("final stage %q: want a distroless static base", froms[1])
	}
	if !strings.Contains(build, "CGO_ENABLED=0") || !strings.Contains(build, "-X github.com/idemcheck/idemcheck/cmd.Version=") || !strings.HasSuffix(build, " .") {
		t.Errorf("build %q: want a static build of the module root stamped with cmd.Version", build)
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "cmd", "version.go")); err != nil || !strings.Contains(string(b), "var Version = ") {
		t.Errorf("cmd.Version, which the build stamps, is not in cmd/version.go: %v", err)
	}
	out := regexp.MustCompile(`-o (\S+)`).FindStringSubmatch(build)
	cp := strings.Fields(copyFrom)
	if out == nil || len(cp) != 3 || cp[0] != "--from=build" || cp[1] != out[1] {
		t.Errorf("COPY %q does not take the binary the build wrote (%v)", copyFrom, out)
	}
	if len(cp) == 3 && entry != `["`+cp[2]+`"]` {
		t.Errorf("ENTRYPOINT %s, want the exec form of the copied binary %s", entry, cp[len(cp)-1])
	}
	if !strings.HasPrefix(user, "nonroot") {
		t.Errorf("USER %q, want nonroot", user)
	}
	// the build image's Go is at least go.mod's
	gomod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindSubmatch(gomod)
	have := regexp.MustCompile(`^golang:(\d+)\.(\d+)`).FindStringSubmatch(froms[0])
	if want == nil || have == nil || version(have[1], have[2]) < version(string(want[1]), string(want[2])) {
		t.Errorf("build image %s is older than go.mod's go %s.%s", froms[0], want[1], want[2])
	}
}

func version(major, minor string) int {
	a, _ := strconv.Atoi(major)
	b, _ := strconv.Atoi(minor)
	return a*1000 + b
}

type instruction struct{ op, args string }

// dockerInstructions reads a Dockerfile's instructions: comments and blank
// lines dropped, continuation lines joined.
func dockerInstructions(t *testing.T, path string) []instruction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		op, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(op), strings.Join(strings.Fields(args), " ")})
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Fatalf("%s ends in a continuation line", path)
	}
	known := map[string]bool{"FROM": true, "WORKDIR": true, "COPY": true, "RUN": true, "ARG": true, "USER": true, "ENTRYPOINT": true, "CMD": true, "ENV": true, "LABEL": true, "EXPOSE": true}
	for _, in := range out {
		if !known[in.op] {
			t.Errorf("%s: unknown instruction %s", path, in.op)
		}
	}
	return out
}
