//go:build unix

package trial

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/childlab"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

func TestMain(m *testing.M) {
	childlab.Serve() // the child lab a nemesis kills and restarts, when this process is one
	os.Exit(m.Run())
}

// yamlList writes argv as a YAML flow list of quoted strings.
func yamlList(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// chargesNemesis is a scenario of the lab's protected charges with a
// nemesis that stops and starts c at 40% of the load.
func chargesNemesis(c *childlab.Lab, expect string, ops int, invariants string) string {
	return fmt.Sprintf(`name: charges-nemesis
expect: %s
users: [alice, bob]
operation:
  method: POST
  path: /charges
  headers: {Authorization: "Bearer {{.User}}"}
  body: '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}'
  key: {header: Idempotency-Key}
load: {ops: %d, concurrency: 6}
retry:
  attempts: 8
  backoff: {initial: 100ms, max: 1s}
  on: [info, fail, 409, 5xx]
settle_grace: 2s
faults:
  - kind: nemesis
    stop: %s
    start: %s
    at: 40%%
    ready: GET /healthz
    ready_timeout: 10s
response:
  fields: {id: $.id}
quiet: 10ms
oracles:
  - name: ledger
    effects:
      bulk: {path: /charges/counts, value: $.counts}
invariants:
%s`, expect, ops, yamlList(c.Stop), yamlList(c.Start), invariants)
}

// The nemesis kills the lab's process (kill -9 of a real child) while
// requests are in flight and relaunches it; the window is in the history,
// requests in flight across it failed, and the load went on once the lab
// was ready again.
func TestNemesisKillsAndRestartsTheLab(t *testing.T) {
	t.Parallel()
	c := childlab.Start(t, "", "")
	before := c.PID()
	// The memory lab forgets everything when killed: same_response alone
	// (a key answered before the kill is never asked again).
	sc := load(t, chargesNemesis(c, "pass", 200, "  - {check: same_response}\n"))
	j, err := Run(context.Background(), sc, Options{Target: c.URL, Seed: 3, KeyNonce: 1})
	if err != nil {
		t.Fatal(err)
	}
	if j.Err != nil {
		t.Fatalf("load error: %v", j.Err)
	}
	ws := j.History.Meta.Nemesis
	if len(ws) != 1 {
		t.Fatalf("Meta.Nemesis = %+v, want one window", ws)
	}
	w := ws[0]
	if w.Err != "" || w.Stop == nil || w.Stop.Exit != 0 || w.Restart == nil || w.Restart.Exit != 0 || w.Ready <= w.Start {
		t.Fatalf("window = %+v (stop %+v, start %+v), want both commands exit 0 and ready after the stop", w, w.Stop, w.Restart)
	}
	if after := c.PID(); after == before || after == 0 {
		t.Errorf("the lab's pid is %d after the window, %d before: it was not restarted", after, before)
	}
	var cut, afterReady, doneBefore int
	for _, op := range j.History.Ops {
		ended := time.Duration(-1)
		for _, a := range j.History.AttemptsOf(op.ID) {
			if a.Outcome != history.OK && a.Start <= w.Ready && a.End >= w.Start {
				cut++
			}
			if a.Acked() && a.Start > w.Ready {
				afterReady++
			}
			if a.Acked() {
				ended = a.End
			}
		}
		if ended >= 0 && ended < w.Start {
			doneBefore++
		}
	}
	if cut == 0 {
		t.Errorf("no attempt failed across the window: the kill did not bite (window %s..%s, stop %+v, start %+v, load %s..%s)",
			w.Start, w.Ready, w.Stop, w.Restart, j.History.Meta.Started, j.History.Meta.Ended)
	}
	if afterReady == 0 {
		t.Error("no attempt was answered after the lab was ready again: the load did not go on")
	}
	if t.Failed() {
		for _, a := range j.History.Attempts {
			t.Logf("op %d #%d %s %d %s..%s %s", a.Op, a.N, a.Outcome, a.Status, a.Start, a.End, a.Err)
		}
	}
	if doneBefore < 200*35/100 {
		t.Errorf("%d ops done before the window opened, want at least 35%% of 200 (at 40%%, jitter 5%%)", doneBefore)
	}
	if r := j.Judgement.Result; r != checks.Met {
		t.Errorf("result %s (%s), want met", r, j.Judgement.Why)
	}
}

// The nemesis on the lab's Postgres ledger: the correct lab holds every
// invariant across a kill -9 and restart (its key in flight is usable
// again once its lease ends), and the crash-stuck lab, whose in-flight
// record outlives the restart with a long lease, is caught.
func TestNemesisCrashStuck(t *testing.T) {
	t.Parallel()
	testenv.SkipUnlessLong(t)
	pg := testsvc.Postgres(t)
	invariants := "  - {check: exactly_once, oracle: ledger}\n  - {check: same_response}\n  - {check: settles}\n"
	t.Run("correct lab holds", func(t *testing.T) {
		c := childlab.Start(t, pg, "nemesis_ok")
		sc := load(t, chargesNemesis(c, "pass", 200, invariants))
		for seed := range uint64(3) {
			j, err := Run(context.Background(), sc, Options{Target: c.URL, Seed: seed, KeyNonce: seed + 1})
			if err != nil {
				t.Fatal(err)
			}
			if j.Judgement.Result != checks.Met || len(j.History.Meta.Nemesis) != 1 || j.History.Meta.Nemesis[0].Err != "" {
				t.Fatalf("seed %d: result %s (%s), windows %+v; want met after one window", seed, j.Judgement.Result, j.Judgement.Why, j.History.Meta.Nemesis)
			}
		}
	})
	t.Run("crash-stuck is caught", func(t *testing.T) {
		c := childlab.Start(t, pg, "nemesis_stuck", "crash-stuck")
		sc := load(t, chargesNemesis(c, "violation", 200, invariants))
		j, err := Run(context.Background(), sc, Options{Target: c.URL, Seed: 1, KeyNonce: 2})
		if err != nil {
			t.Fatal(err)
		}
		if j.Judgement.Result != checks.Met {
			t.Fatalf("crash-stuck: result %s (%s), want the violation caught", j.Judgement.Result, j.Judgement.Why)
		}
		named := false
		for _, v := range j.Judgement.Verdicts {
			if v.Invariant == checks.Settles && v.Status == checks.Fail {
				for _, ex := range v.Examples {
					named = named || strings.Contains(ex.Problem, "nemesis window 1")
				}
			}
		}
		if !named {
			t.Errorf("settles' evidence names no key across the nemesis window: %+v", j.Judgement.Verdicts)
		}
	})
}

// files is a directory where commands leave marks.
type files string

func (d files) path(name string) string { return filepath.Join(string(d), name) }

func (d files) has(name string) bool {
	_, err := os.Stat(d.path(name))
	return err == nil
}

// readyServer answers GET /healthz 503 until the file up exists, 200
// after; it counts the other requests.
func readyServer(t *testing.T, d files) (string, *atomic.Int64) {
	var other atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			if !d.has("up") {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			return
		}
		other.Add(1)
	})
	return serve(t, h), &other
}

func nemesisOf(t *testing.T, s faults.Spec) faults.Nemesis {
	t.Helper()
	s.Kind = faults.KindNemesis
	if s.At == 0 {
		s.At = 0.5
	}
	ns, err := faults.NewNemeses(1, []faults.Spec{s})
	if err != nil {
		t.Fatal(err)
	}
	return ns[0]
}

func targetURL(t *testing.T, raw string) []*url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return []*url.URL{u}
}

// Strike runs stop, then start, then waits for ready, and records each.
func TestStrike(t *testing.T) {
	t.Parallel()
	d := files(t.TempDir())
	srv, _ := readyServer(t, d)
	n := nemesisOf(t, faults.Spec{Stop: []string{"sh", "-c", "echo stopping; touch \"$0\"", d.path("stopped")},
		Start: []string{"sh", "-c", "sleep 0.2; touch \"$0\"", d.path("up")}, Ready: "GET /healthz", ReadyTimeout: 5 * time.Second})
	w := Strike(context.Background(), n, 1, NemesisOptions{Targets: targetURL(t, srv), Origin: time.Now()})
	if w.Err != "" || !d.has("stopped") || !d.has("up") {
		t.Fatalf("Strike = %+v, want both commands run and no error", w)
	}
	if w.Stop.Exit != 0 || w.Stop.Output != "stopping" || w.Restart.Exit != 0 || w.Restart.End < w.Restart.Start+150*time.Millisecond {
		t.Errorf("commands = %+v, %+v; want exit 0, the stop's output, the start's 200ms", w.Stop, w.Restart)
	}
	if w.Ready < w.Restart.End || w.Start > w.Stop.Start {
		t.Errorf("window %s..%s, commands %s..%s: want the window to hold them", w.Start, w.Ready, w.Stop.Start, w.Restart.End)
	}
}

// A caller with a schedule of its own strikes with a Nemesis it made: its
// zero ReadyTimeout is the default, not an instant deadline.
func TestStrikeOwnNemesis(t *testing.T) {
	t.Parallel()
	w := Strike(context.Background(), faults.Nemesis{Stop: []string{"true"}, Start: []string{"true"}}, 1, NemesisOptions{Origin: time.Now()})
	if w.Err != "" || w.Stop.Exit != 0 || w.Restart.Exit != 0 {
		t.Errorf("Strike = %+v (%+v, %+v), want both commands run", w, w.Stop, w.Restart)
	}
}

// A window that goes wrong says why, with the exit status and output of
// the command at fault; every wait is bounded.
func TestStrikeFailures(t *testing.T) {
	t.Parallel()
	d := files(t.TempDir())
	srv, _ := readyServer(t, d)
	never := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	for _, tc := range []struct {
		name   string
		spec   faults.Spec
		target string
		err    string
		exit   int
		output string
	}{
		{"stop exits 3", faults.Spec{Stop: []string{"sh", "-c", "echo no such pod >&2; exit 3"}}, srv, "stop command exited 3", 3, "no such pod"},
		{"stop not found", faults.Spec{Stop: []string{"./no-such-command-here"}}, srv, "no such file or directory", -1, ""},
		{"start times out", faults.Spec{Stop: []string{"true"}, Start: []string{"sleep", "5"}, ReadyTimeout: 200 * time.Millisecond}, srv,
			"start command did not end within 200ms (killed)", 0, ""},
		{"never ready", faults.Spec{Stop: []string{"true"}, Ready: "GET /healthz", ReadyTimeout: 300 * time.Millisecond}, never,
			"the target was not ready within 300ms (GET /healthz: 503 Service Unavailable)", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			w := Strike(context.Background(), nemesisOf(t, tc.spec), 1, NemesisOptions{Targets: targetURL(t, tc.target), Origin: began})
			if took := time.Since(began); took > 3*time.Second {
				t.Errorf("Strike took %s: a wait was not bounded", took)
			}
			if !strings.Contains(w.Err, tc.err) {
				t.Errorf("window error = %q, want %q", w.Err, tc.err)
			}
			if w.Stop.Exit != tc.exit || !strings.Contains(w.Stop.Output, tc.output) {
				t.Errorf("stop = %+v, want exit %d, output %q", w.Stop, tc.exit, tc.output)
			}
		})
	}
}

// Ctrl-C ends the wait for readiness at once; the start command, which
// brings the target back, still runs under the restore context.
func TestStrikeInterrupted(t *testing.T) {
	t.Parallel()
	d := files(t.TempDir())
	srv, _ := readyServer(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	n := nemesisOf(t, faults.Spec{Stop: []string{"sh", "-c", "sleep 0.1"}, Start: []string{"touch", d.path("restored")},
		Ready: "GET /healthz", ReadyTimeout: 10 * time.Second})
	time.AfterFunc(50*time.Millisecond, cancel)
	began := time.Now()
	w := Strike(ctx, n, 1, NemesisOptions{Targets: targetURL(t, srv), Origin: began, Restore: context.Background()})
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("an interrupted window took %s", took)
	}
	if !strings.Contains(w.Err, "interrupted") || w.Stop.Exit != -1 || !d.has("restored") {
		t.Errorf("window = %+v (stop %+v); want the stop killed, the start run, the wait interrupted", w, w.Stop)
	}
}

// The commands shown in a report, and their output, hide the secrets
// they hold.
func TestNemesisCommandsScrubbed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		argv   []string
		secret []string
		want   string
	}{
		{[]string{"curl", "-H", "Authorization: Bearer s3cr3t-bearer", "https://ops:pa55word@deploy.example/restart?token=t0k3n-q"},
			[]string{"s3cr3t-bearer", "pa55word", "t0k3n-q"}, "curl -H 'Authorization: Bearer xxxxx' 'https://ops:xxxxx@deploy.example/restart?token=xxxxx'"},
		{[]string{"deploy", "--api-token", "tok-3f9a", "restart"}, []string{"tok-3f9a"}, "deploy --api-token xxxxx restart"},
		{[]string{"sh", "-c", "API_KEY=k3yvalue ./restart --password=hunter22 && kubectl delete pod api-0"},
			[]string{"k3yvalue", "hunter22"}, "sh -c 'API_KEY=xxxxx ./restart --password=xxxxx && kubectl delete pod api-0'"},
		{[]string{"kill", "-9", "1234"}, nil, "kill -9 1234"},
	} {
		s := newStriker(NemesisOptions{})
		got := s.shown(tc.argv)
		if got != tc.want {
			t.Errorf("shown(%q) = %s, want %s", tc.argv, got, tc.want)
		}
		for _, sec := range tc.secret {
			if strings.Contains(got, sec) || !strings.Contains(s.secrets.Scrub("said "+sec), "xxxxx") {
				t.Errorf("shown(%q): %q is shown, or not scrubbed from the output", tc.argv, sec)
			}
		}
	}
	// What a command prints of a secret it was given is scrubbed too.
	n := nemesisOf(t, faults.Spec{Stop: []string{"sh", "-c", `echo "using $2"`, "sh", "--token", "t0ken-value-9"}})
	w := Strike(context.Background(), n, 1, NemesisOptions{Origin: time.Now()})
	if strings.Contains(w.Stop.Command+w.Stop.Output, "t0ken-value-9") || w.Stop.Output != "using xxxxx" {
		t.Errorf("stop = %+v, want the token masked in the command and its output", w.Stop)
	}
}

// nemesisScenario is the trial tests' pay scenario with a nemesis whose
// commands leave marks in d instead of stopping anything.
func nemesisScenario(d files, extra string) string {
	return strings.Replace(scenario, "faults:\n  - {kind: drop_ack, rate: 0.4}\n", fmt.Sprintf(`faults:
  - {kind: drop_ack, rate: 0.2}
  - kind: nemesis
    stop: [touch, %q]
    start: [touch, %q]
    at: 50%%
    ready: GET /healthz
%s`, d.path("stopped"), d.path("up"), extra), 1)
}

// A run's nemesis strikes at its share of the ops, beside the load, and
// its window is in the history, judged with it.
func TestRunWithNemesis(t *testing.T) {
	t.Parallel()
	d := files(t.TempDir())
	srv := serve(t, &charges{idempotent: true, n: map[string]int{}})
	sc := load(t, nemesisScenario(d, ""))
	j, err := Run(context.Background(), sc, Options{Target: srv, Seed: 9})
	if err != nil || j.Err != nil {
		t.Fatalf("Run = %v, %v", err, j.Err)
	}
	ws := j.History.Meta.Nemesis
	if len(ws) != 1 || ws[0].Err != "" || ws[0].Fault != 1 || !d.has("stopped") || !d.has("up") {
		t.Fatalf("windows = %+v, want one that ran both commands", ws)
	}
	done := 0
	for _, op := range j.History.Ops {
		as := j.History.AttemptsOf(op.ID)
		if len(as) > 0 && as[len(as)-1].End < ws[0].Start {
			done++
		}
	}
	if done < 30*45/100 {
		t.Errorf("%d of 30 ops done before the window, want at least 45%% (at 50%%, jitter 5%%)", done)
	}
	if j.Judgement.Result != checks.Met {
		t.Errorf("result %s (%s), want met", j.Judgement.Result, j.Judgement.Why)
	}
}

// A window whose command fails leaves the load's history whole, and the
// run inconclusive with the reason.
func TestRunWithFailingNemesis(t *testing.T) {
	t.Parallel()
	d := files(t.TempDir())
	srv := serve(t, &charges{idempotent: true, n: map[string]int{}})
	sc := load(t, strings.Replace(nemesisScenario(d, ""), "stop: [touch,", "stop: [sh, -c, 'exit 7', ", 1))
	j, err := Run(context.Background(), sc, Options{Target: srv, Seed: 9})
	if err != nil || j.Err != nil {
		t.Fatalf("Run = %v, %v", err, j.Err)
	}
	if len(j.History.Ops) != 30 || j.Judgement.Result != checks.Inconclusive || !strings.Contains(j.Judgement.Why, "stop command exited 7") {
		t.Errorf("%d ops, result %s (%s); want 30 ops, inconclusive on the stop command", len(j.History.Ops), j.Judgement.Result, j.Judgement.Why)
	}
}

// A nemesis whose moment the load never reached is recorded as such.
func TestNemesisNeverRan(t *testing.T) {
	t.Parallel()
	d := files(t.TempDir())
	srv := serve(t, &charges{idempotent: true, n: map[string]int{}})
	tr, _, err := newTrial(load(t, nemesisScenario(d, "")), Options{Target: srv, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	n, err := tr.nemesis(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n.Start(30, 0)
	n.OpDone(0, history.Acked)
	ws := n.finish(nil)
	if len(ws) != 1 || !strings.Contains(ws[0].Err, "it never ran: the load ended before its moment") || d.has("stopped") {
		t.Errorf("windows = %+v, want one that never ran", ws)
	}
}

// A shard's load never runs the user's commands: its scenario comes from
// a manifest that nothing authenticates.
func TestNemesisRefusedInAShard(t *testing.T) {
	t.Parallel()
	d := files(t.TempDir())
	srv, sent := readyServer(t, d)
	tr, _, err := newTrial(load(t, nemesisScenario(d, "")), Options{Target: srv, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	tr.ropts.Shard = history.Shard{Index: 0, Count: 2}
	h, err := tr.Load(context.Background())
	if !errors.Is(err, ErrNemesisSharded) || !errors.Is(err, ErrConfig) || h == nil {
		t.Fatalf("Load of a shard with a nemesis = %v, %v; want ErrNemesisSharded", h, err)
	}
	if d.has("stopped") || sent.Load() > 0 {
		t.Errorf("a refused shard ran its stop command (%v) or sent %d requests", d.has("stopped"), sent.Load())
	}
}

// A secret-looking variable a command refers to is scrubbed from what it
// prints; another is not.
func TestNemesisEnvSecrets(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DEPLOY_TOKEN": "tok-abcdef", "HOME": "/home/ci"}
	s := newStriker(NemesisOptions{})
	envSecrets(s.secrets, func(k string) string { return env[k] }, []string{"sh", "-c", `deploy --key "${DEPLOY_TOKEN}" --home $HOME`})
	if got := s.secrets.Scrub("key tok-abcdef in /home/ci"); got != "key xxxxx in /home/ci" {
		t.Errorf("Scrub = %q, want the token masked and HOME kept", got)
	}
}
