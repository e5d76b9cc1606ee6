package trial

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/hint"
	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// The nemesis: a scenario's faults of kind nemesis stop the target's
// process during the load and bring it back, at seeded moments, while
// requests are in flight:
//
//	load ──────────────────────────────────────────────────────────>
//	          at (share of ops or duration, jittered)   every (jittered)
//	          │                                          │
//	          stop ──> start ──> ready? (poll 2xx) ──────┴─ stop ──> …
//	          └──────────── window (Meta.Nemesis) ──┘
//
// Each window is recorded in the history (history.Meta.Nemesis): when it
// opened and when the target was ready again, the commands run, their
// exit status and the start of their output, secrets scrubbed. A command
// that fails, a target that is not ready in time, or a moment the load
// never reached is recorded with its reason, and the judgement makes the
// run inconclusive on it (checks): never an error that would hide the
// history of the load.
//
// The commands are the user's: they run only in the process that read
// the user's scenario (Prepare, Run), never in a shard's load process,
// which reads its scenario from a manifest on a shared volume (LoadShard
// refuses one with a nemesis, ErrNemesisSharded), and never when a saved
// history is judged. They run without a shell (write [sh, -c, "…"] for
// one), in the process's environment, each in a process group of its own
// (so a terminal's Ctrl-C does not reach a server a start command left
// running), bounded by the nemesis's ready_timeout.

// ErrNemesisSharded is wrapped by the error of a sharded run (its
// prepare, a shard's load, its judge) whose scenario declares a nemesis.
// Its shards share one target: one process's kill would cut every
// shard's requests in flight at a moment no shard plans (each schedules
// only its own load, and the windows would be in one shard's history
// only); and its commands would come from a manifest any writer of the
// run's directory could have changed.
var ErrNemesisSharded = errors.New("a sharded run cannot run a nemesis: the shards share the target, so one process's kill would cut every shard's requests in flight at a moment no shard plans, and its commands would be read back from a manifest that nothing authenticates")

// MaxNemesisOutput bounds what a window keeps of each command's output.
const MaxNemesisOutput = 2 << 10

// readyPoll is how often a nemesis asks whether the target is ready,
// and readyProbe bounds each such request.
const (
	readyPoll  = 100 * time.Millisecond
	readyProbe = 2 * time.Second
)

// NemesisOptions are what a nemesis window needs besides the nemesis.
type NemesisOptions struct {
	// Targets are asked the readiness request; every one must answer 2xx.
	Targets []*url.URL
	// Transport sends the readiness requests; nil means
	// http.DefaultTransport's.
	Transport http.RoundTripper
	// Origin is the time the window's offsets are measured from: the
	// start of the load.
	Origin time.Time
	// Secrets are scrubbed from the commands shown and their output, with
	// the targets' own (their passwords and query values).
	Secrets *redact.Secrets
	// Restore, when set, is the context of the start command: a window
	// whose stop command ran brings the target back even after its ctx
	// ended (a first Ctrl-C), until Restore ends (a second one). Nil
	// means the window's ctx.
	Restore context.Context
}

// Strike runs window k of nemesis n now: its stop command, then its start
// command, then it waits until every target answers its readiness request
// with a 2xx (within n.ReadyTimeout, until ctx ends). It returns the
// window as a history records it; its Err says what went wrong, if
// anything. It is what a run's schedule calls at each moment, and what a
// caller with its own schedule (an audit's probe) calls itself, with a
// Nemesis of its own making (its At and Every unused; a ReadyTimeout of 0
// means faults.DefaultReadyTimeout).
func Strike(ctx context.Context, n faults.Nemesis, k int, o NemesisOptions) history.NemesisWindow {
	if n.ReadyTimeout <= 0 {
		n.ReadyTimeout = faults.DefaultReadyTimeout
	}
	s := newStriker(o)
	return s.strike(ctx, n, k)
}

// striker runs windows.
type striker struct {
	o       NemesisOptions
	client  *http.Client
	secrets *redact.Secrets
}

func newStriker(o NemesisOptions) *striker {
	s := &striker{o: o, client: &http.Client{Transport: o.Transport}, secrets: o.Secrets}
	if s.secrets == nil {
		s.secrets = &redact.Secrets{}
	}
	for _, u := range o.Targets {
		s.secrets.AddURL(u)
	}
	return s
}

func (s *striker) since() time.Duration { return time.Since(s.o.Origin) }

func (s *striker) strike(ctx context.Context, n faults.Nemesis, k int) history.NemesisWindow {
	w := history.NemesisWindow{Fault: n.Fault, N: k, Start: s.since()}
	if ctx.Err() != nil {
		w.Ready, w.Err = w.Start, "interrupted before it opened"
		return w
	}
	var errs []string
	w.Stop = s.command(ctx, n.Stop, n.ReadyTimeout)
	if w.Stop.Err != "" {
		errs = append(errs, "stop command "+w.Stop.Err)
	}
	if len(n.Start) > 0 {
		restore := s.o.Restore
		if restore == nil {
			restore = ctx
		}
		w.Restart = s.command(restore, n.Start, n.ReadyTimeout)
		if w.Restart.Err != "" {
			errs = append(errs, "start command "+w.Restart.Err)
		}
	}
	if err := s.ready(ctx, n); err != nil {
		errs = append(errs, err.Error())
	}
	w.Ready = s.since()
	w.Err = strings.Join(errs, "; ")
	return w
}

// ready waits until every target answers n's readiness request with a
// 2xx, polling every readyPoll, within n.ReadyTimeout and until ctx ends.
func (s *striker) ready(ctx context.Context, n faults.Nemesis) error {
	if n.ReadyMethod == "" {
		return nil
	}
	if ctx.Err() != nil {
		return errors.New("interrupted before the target was ready")
	}
	wctx, cancel := context.WithTimeout(ctx, n.ReadyTimeout)
	defer cancel()
	client := *s.client
	client.Timeout = n.ReadyTimeout
	last := ""
	for {
		ok, why := s.answers(wctx, &client, n)
		if ok {
			return nil
		}
		if wctx.Err() == nil || last == "" { // not the wait's own end
			last = why
		}
		t := time.NewTimer(readyPoll)
		select {
		case <-wctx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return errors.New("interrupted before the target was ready")
			}
			return fmt.Errorf("the target was not ready within %s (%s %s: %s)", n.ReadyTimeout, n.ReadyMethod, n.ReadyPath, last)
		case <-t.C:
		}
	}
}

// answers reports whether every target answers the readiness request
// with a 2xx; else what the first that did not answered.
func (s *striker) answers(ctx context.Context, client *http.Client, n faults.Nemesis) (bool, string) {
	for _, target := range s.o.Targets {
		u, err := scenarios.Join(target, n.ReadyPath)
		if err != nil {
			return false, err.Error()
		}
		pctx, cancel := context.WithTimeout(ctx, readyProbe)
		req, err := http.NewRequestWithContext(pctx, n.ReadyMethod, u, nil)
		if err != nil {
			cancel()
			return false, err.Error()
		}
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // it quotes the URL
			}
			return false, s.secrets.Scrub(err.Error())
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		cancel()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return false, resp.Status
		}
	}
	return true, ""
}

// command runs argv within timeout and until ctx ends, and records it.
func (s *striker) command(ctx context.Context, argv []string, timeout time.Duration) *history.NemesisCommand {
	c := &history.NemesisCommand{Command: s.shown(argv), Start: s.since(), Exit: -1}
	defer func() { c.End = s.since() }()
	if ctx.Err() != nil {
		c.Err = "not run: interrupted"
		return c
	}
	// The output goes to a file, not a pipe: a command that leaves a
	// process running (a server started in the background) would hold
	// a pipe open, and Wait with it; and that process would die of a
	// broken pipe once the pipe was closed.
	out, err := os.CreateTemp("", "idemcheck-nemesis-*")
	if err != nil {
		c.Err = "not run: " + s.secrets.Scrub(err.Error())
		return c
	}
	defer func() {
		out.Close()
		os.Remove(out.Name())
	}()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	ownGroup(cmd)
	err = cmd.Run()
	if cmd.ProcessState != nil {
		c.Exit = cmd.ProcessState.ExitCode()
	}
	c.Output = s.output(out)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		c.Exit, c.Err = -1, fmt.Sprintf("did not end within %s (killed)", timeout)
	case ctx.Err() != nil:
		c.Exit, c.Err = -1, "interrupted (killed)"
	case errors.As(err, &ee) && c.Exit >= 0:
		c.Err = fmt.Sprintf("exited %d", c.Exit)
	default:
		c.Err = s.secrets.Scrub(err.Error())
	}
	return c
}

// output is the start of what a command wrote to f, scrubbed: at most
// MaxNemesisOutput bytes, cut on a rune.
func (s *striker) output(f *os.File) string {
	buf := make([]byte, MaxNemesisOutput+1)
	n, _ := f.ReadAt(buf, 0)
	b := buf[:n]
	more := len(b) > MaxNemesisOutput
	if more {
		b = b[:MaxNemesisOutput]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
	}
	text := s.secrets.Scrub(strings.ToValidUTF8(strings.TrimRight(string(b), "\n"), "?"))
	if more {
		text += "…"
	}
	return text
}

// shown is argv as a report shows it (redact.Secrets.Command): quoted
// as a shell would need, secrets masked and added to s's secrets.
func (s *striker) shown(argv []string) string { return s.secrets.Command(argv) }

// nemesis runs a scenario's nemeses beside its load, on their schedule.
// It hears the load's progress as a runner.Observer: the load's start
// starts the clock, each op done moves it on.
type nemesis struct {
	*striker
	ctx   context.Context // the load's: its end stops every wait
	specs []faults.Nemesis
	ops   int
	dur   time.Duration

	started  atomic.Bool
	done     atomic.Int64  // ops done
	tick     chan struct{} // nudged at each op done
	loadDone chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	windows  []history.NemesisWindow
}

// nemesis returns the nemesis of t's scenario, nil when it declares
// none. A shard's trial refuses one (ErrNemesisSharded).
func (t *Trial) nemesis(ctx context.Context) (*nemesis, error) {
	if !faults.HasNemesis(t.sc.Faults) {
		return nil, nil
	}
	if t.ropts.Shard.Count > 0 {
		return nil, fmt.Errorf("%w: %w", ErrConfig, ErrNemesisSharded)
	}
	specs, err := faults.NewNemeses(t.opts.Seed, t.sc.Faults)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	secrets := t.opts.Secrets // the run's one registry
	if secrets == nil {
		secrets = &redact.Secrets{}
	}
	for name, v := range t.sc.Operation.Headers {
		if !strings.Contains(v, "{{") {
			secrets.AddHeader(name, v)
		}
	}
	for _, sp := range specs {
		envSecrets(secrets, t.opts.Getenv, append(slices.Clone(sp.Stop), sp.Start...))
	}
	n := &nemesis{
		striker: newStriker(NemesisOptions{Targets: t.targets, Transport: t.opts.Transport, Secrets: secrets, Restore: abortOf(ctx)}),
		ctx:     ctx, specs: specs, ops: t.sc.Load.Ops, dur: time.Duration(t.sc.Load.Duration),
		tick: make(chan struct{}, 1), loadDone: make(chan struct{}),
	}
	return n, nil
}

// envRef is a shell's reference to an environment variable: $NAME or
// ${NAME}.
var envRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

// envSecrets adds to secrets the value of every environment variable with
// a secret-looking name (DEPLOY_TOKEN, DB_PASSWORD) that argv refers to,
// so that a command's output never shows it.
func envSecrets(secrets *redact.Secrets, getenv func(string) string, argv []string) {
	if getenv == nil {
		return
	}
	for _, a := range argv {
		for _, m := range envRef.FindAllStringSubmatch(a, -1) {
			if redact.SecretHeader(m[1]) {
				secrets.Add(getenv(m[1]))
			}
		}
	}
}

// options are the runner's options o with n hearing the load's progress.
func (n *nemesis) options(o runner.Options) runner.Options {
	if n == nil {
		return o
	}
	if o.Observer != nil {
		o.Observer = runner.Observers{o.Observer, n}
	} else {
		o.Observer = n
	}
	return o
}

// Start implements runner.Observer: the load starts, and each nemesis's
// schedule with it.
func (n *nemesis) Start(totalOps int, d time.Duration) {
	if n.started.Swap(true) {
		return
	}
	n.o.Origin = time.Now()
	if totalOps > 0 {
		n.ops = totalOps
	}
	if d > 0 {
		n.dur = d
	}
	for _, sp := range n.specs {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.run(sp)
		}()
	}
}

// OpDone implements runner.Observer.
func (n *nemesis) OpDone(int, history.OpState) {
	n.done.Add(1)
	select {
	case n.tick <- struct{}{}:
	default:
	}
}

// finish stops the schedules (no window opens once the load is over),
// waits for a window under way to end, and returns every window in the
// order they opened, its times moved to the origin of h's attempts. Nil-safe.
func (n *nemesis) finish(h *history.History) []history.NemesisWindow {
	if n == nil {
		return nil
	}
	close(n.loadDone)
	n.wg.Wait()
	slices.SortStableFunc(n.windows, func(a, b history.NemesisWindow) int {
		return int(min(max(a.Start-b.Start, -1), 1))
	})
	if h != nil && !h.Meta.Started.IsZero() && n.started.Load() {
		// The attempts' offsets are from the runner's start (Meta.Started,
		// to within a statement), which came a little after the load's
		// start as n heard it: on a busy machine, milliseconds after.
		shift := h.Meta.Started.Sub(n.o.Origin)
		for i := range n.windows {
			w := &n.windows[i]
			w.Start, w.Ready = w.Start-shift, w.Ready-shift
			for _, c := range []*history.NemesisCommand{w.Stop, w.Restart} {
				if c != nil {
					c.Start, c.End = c.Start-shift, c.End-shift
				}
			}
		}
	}
	return n.windows
}

func (n *nemesis) record(w history.NemesisWindow) {
	n.mu.Lock()
	n.windows = append(n.windows, w)
	n.mu.Unlock()
}

// run is one nemesis's schedule: its first window at its moment, then one
// every pause while the load runs. A window that went wrong ends it.
func (n *nemesis) run(sp faults.Nemesis) {
	if !n.waitMoment(sp) {
		if n.ctx.Err() == nil {
			t := n.since()
			n.record(history.NemesisWindow{Fault: sp.Fault, N: 1, Start: t, Ready: t,
				Err: fmt.Sprintf("it never ran: the load ended before its moment (%.1f%% of %s; at %s, with jitter)", 100*sp.Moment(), n.loadSize(), sp.At)})
		}
		return
	}
	for k := 1; ; k++ {
		w := n.strike(n.ctx, sp, k)
		n.record(w)
		if w.Err != "" || sp.Every <= 0 || !n.wait(sp.Pause(k+1)) {
			return
		}
	}
}

// loadSize names what a moment is a share of.
func (n *nemesis) loadSize() string {
	switch {
	case n.ops > 0 && n.dur > 0:
		return fmt.Sprintf("%d ops or %s", n.ops, n.dur)
	case n.ops > 0:
		return fmt.Sprintf("%d ops", n.ops)
	}
	return n.dur.String()
}

// waitMoment waits for sp's moment: that share of the load's ops done,
// or of its duration passed, whichever comes first. It reports false
// when the load ended (or ctx did) first.
func (n *nemesis) waitMoment(sp faults.Nemesis) bool {
	m := sp.Moment()
	var at <-chan time.Time
	if n.dur > 0 {
		t := time.NewTimer(time.Until(n.o.Origin.Add(time.Duration(m * float64(n.dur)))))
		defer t.Stop()
		at = t.C
	}
	need := int64(math.MaxInt64)
	if n.ops > 0 {
		need = int64(math.Ceil(m * float64(n.ops)))
	}
	if at == nil && n.ops <= 0 {
		return false
	}
	for {
		if n.done.Load() >= need {
			return true
		}
		select {
		case <-n.tick:
		case <-at:
			return true
		case <-n.loadDone:
			return false
		case <-n.ctx.Done():
			return false
		}
	}
}

// wait waits d; false when the load ended (or ctx did) first.
func (n *nemesis) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		select {
		case <-n.loadDone:
			return false
		default:
			return n.ctx.Err() == nil
		}
	case <-n.loadDone:
		return false
	case <-n.ctx.Done():
		return false
	}
}

// Crash is an audit's crash of the API (C28), from its flags: a shell
// command that kills the API's process, one that starts it again (""
// when the platform restarts it), the request that answers 2xx once it
// is back ("GET /healthz") and how long each may take.
type Crash struct {
	Kill, Start, Ready string
	ReadyTimeout       time.Duration
}

// Strikes returns the crash as audit.Config.Crash wants it: each call a
// window struck now (Strike), numbered by its round, its offsets from
// origin; nil when no kill command is given. Its error (a hint error)
// says which flag is wrong and what to write.
func (c Crash) Strikes(targets []*url.URL, transport http.RoundTripper, secrets *redact.Secrets) (func(context.Context, int, time.Time) history.NemesisWindow, error) {
	if c.Kill == "" {
		if c.Start != "" || c.Ready != "" {
			return nil, hint.New("give --kill-cmd, the command that kills the API's process, for C28", errors.New("--start-cmd and --ready go with --kill-cmd"))
		}
		return nil, nil
	}
	if c.Ready == "" {
		return nil, hint.New("e.g. --ready 'GET /healthz'", errors.New("--kill-cmd needs --ready, the request that answers 2xx once the API is back"))
	}
	method, path, err := faults.ParseReady(c.Ready)
	if err != nil {
		return nil, hint.New("METHOD /path, e.g. --ready 'GET /healthz'", fmt.Errorf("--ready %q: %w", c.Ready, err))
	}
	if c.ReadyTimeout <= 0 {
		return nil, hint.New("e.g. --ready-timeout 30s", fmt.Errorf("--ready-timeout %v: want a positive duration", c.ReadyTimeout))
	}
	n := faults.Nemesis{Stop: []string{"sh", "-c", c.Kill}, ReadyMethod: method, ReadyPath: path, ReadyTimeout: c.ReadyTimeout}
	if c.Start != "" {
		n.Start = []string{"sh", "-c", c.Start}
	}
	return func(ctx context.Context, round int, origin time.Time) history.NemesisWindow {
		return Strike(ctx, n, round, NemesisOptions{Targets: targets, Transport: transport, Origin: origin, Secrets: secrets})
	}, nil
}
