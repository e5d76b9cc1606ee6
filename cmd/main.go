package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/internal/termsafe"
	"github.com/idemcheck/idemcheck/internal/yamlstrict"
	"github.com/idemcheck/idemcheck/lab"
	"github.com/idemcheck/idemcheck/trial"
)

// ExitCode is the process exit status.
type ExitCode int

// The exit-code table: the only place outcomes become numbers.
const (
	ExitOK           ExitCode = 0   // every expectation met
	ExitFailed       ExitCode = 1   // an invariant or threshold failed, or an expected violation was not caught
	ExitUsage        ExitCode = 2   // bad usage or configuration
	ExitInconclusive ExitCode = 3   // a check could not decide
	ExitRuntime      ExitCode = 4   // the target could not be reached or set up, a report could not be written
	ExitInterrupted  ExitCode = 130 // stopped by a signal
)

// rank orders codes when several runs end differently: the worst wins.
func rank(c ExitCode) int {
	switch c {
	case ExitInterrupted:
		return 6
	case ExitRuntime:
		return 5
	case ExitUsage:
		return 4
	case ExitFailed:
		return 3
	case ExitInconclusive:
		return 2
	}
	return 0
}

func worst(a, b ExitCode) ExitCode {
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// codedError is an error that knows its exit code.
type codedError struct {
	code ExitCode
	err  error
	hint string
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// ExitCode returns the code the error exits with.
func (e *codedError) ExitCode() ExitCode { return e.code }

func withCode(code ExitCode, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: code, err: err}
}

func withHint(code ExitCode, err error, hint string) error {
	return &codedError{code: code, err: err, hint: hint}
}

// usageError is bad usage or configuration (exit 2).
func usageError(format string, args ...any) error {
	return &codedError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// silentExit ends a command with a code after it already printed what it had to say.
type silentExit struct{ code ExitCode }

func (s silentExit) Error() string { return fmt.Sprintf("exit %d", s.code) }

// Streams are the process's standard streams.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// ErrTerminal is true when Err is a terminal: progress bars go there.
	ErrTerminal bool
	// Secrets is the command's one registry of secrets: what it sends
	// is registered there, reports scrub their values with it, and Err
	// writes with them masked. Main makes it.
	Secrets *redaction.Secrets
}

// StdStreams returns the process's streams.
func StdStreams() Streams {
	return Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrTerminal: term.IsTerminal(int(os.Stderr.Fd()))}
}

// Main runs idemcheck with args (without the program name) and returns the
// exit code. It is the only place that prints errors.
//
// The first SIGINT or SIGTERM (or ctx's end) interrupts the command: a run
// stops its load, still reads the state and writes what it saw, and exits
// 130. A second one aborts that too: Main returns 130 at once, leaving the
// command to its end (files are written whole or not at all).
func Main(ctx context.Context, args []string, streams Streams, getenv func(string) string) ExitCode {
	sigs, _ := ctx.Value(signalsKey{}).(chan os.Signal)
	if sigs == nil {
		sigs = make(chan os.Signal, 2)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sigs)
	}
	// ctx's end is a first interrupt; only a second signal aborts.
	abort, abortAll := context.WithCancel(context.WithoutCancel(ctx))
	defer abortAll()
	ctx, interrupt := context.WithCancel(trial.WithAbort(ctx, abort))
	defer interrupt()
	// go-redis logs dial failures through a global logger to stderr; the
	// lab reports them as 503s and errors instead.
	lab.SilenceRedisLog()
	streams.Secrets = &redaction.Secrets{}
	streams.Err = streams.Secrets.Writer(streams.Err)
	f := &Factory{Streams: streams, Getenv: getenv}
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	done := make(chan ExitCode, 1)
	go func() {
		err := root.ExecuteContext(ctx)
		if short := streams.Secrets.Unmasked(); len(short) > 0 {
			fmt.Fprintf(streams.Err, "warning: %s: shorter than %d characters, not masked in what was written\n", strings.Join(short, ", "), redaction.MinEnvSecret)
		}
		done <- report(streams.Err, err)
	}()
	for {
		select {
		case code := <-done:
			return code
		case <-sigs:
			if ctx.Err() == nil {
				interrupt()
				continue
			}
			abortAll()
			fmt.Fprintln(streams.Err, "idemcheck: interrupted again: exiting now")
			return ExitInterrupted
		}
	}
}

// signalsKey carries, in tests, the channel Main reads signals from in
// place of the process's.
type signalsKey struct{}

func report(w io.Writer, err error) ExitCode {
	if err == nil {
		return ExitOK
	}
	var s silentExit
	if errors.As(err, &s) {
		return s.code
	}
	code := ExitUsage // cobra's own errors (unknown flag, bad args) are usage errors
	var ce *codedError
	if errors.As(err, &ce) {
		code = ce.code
	}
	if errors.Is(err, context.Canceled) && code != ExitUsage {
		code = ExitInterrupted
	}
	// an error can quote a target's answer or a scenario: its control
	// characters are shown escaped; its own lines (errors joined) kept
	fmt.Fprintf(w, "idemcheck: %s\n", termsafe.Lines(err.Error()))
	var h interface{ Hint() string }
	switch {
	case ce != nil && ce.hint != "":
		fmt.Fprintf(w, "hint: %s\n", termsafe.Lines(ce.hint))
	case errors.As(err, &h) && h.Hint() != "":
		fmt.Fprintf(w, "hint: %s\n", termsafe.Lines(h.Hint())) // a library error that says what to write instead
	}
	if code == ExitUsage && ce == nil {
		fmt.Fprintln(w, "run 'idemcheck --help' for usage")
	}
	return code
}

// Factory carries what commands depend on, so tests can swap it.
type Factory struct {
	Streams Streams
	Getenv  func(string) string
}

// NewCmdRoot builds the command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "idemcheck",
		Short: "Prove whether an HTTP API is idempotent",
		Long: `idemcheck drives an HTTP API with concurrent requests, injects the faults that
make clients retry (dropped acks, timeouts, duplicate sends, resets), records
every attempt, then checks invariants against the API's real state: one charge
per Idempotency-Key, an exact like count, a compare-and-set debit applied once.

Exit codes: 0 every expectation met, 1 an invariant or threshold failed,
2 usage or config error, 3 inconclusive, 4 runtime error (target unreachable),
130 interrupted.`,
		Example: `  # see every classic failure caught and every fix hold, on the built-in lab
  idemcheck demo

  # test your own API with a scenario file
  idemcheck run my-charges.yaml --target http://127.0.0.1:8080 --out ./report

  # run a built-in scenario against a lab you started yourself
  idemcheck lab --listen 127.0.0.1:8080 &
  idemcheck run charges-lost-ack --target http://127.0.0.1:8080`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(NewCmdRun(f, nil), NewCmdCheck(f, nil), NewCmdScenarios(f), NewCmdVersion(f), NewCmdLab(f, nil), NewCmdDemo(f, nil), NewCmdProxy(f, nil), NewCmdBench(f), NewCmdAudit(f, nil), NewCmdInit(f, nil), NewCmdReport(f))
	setVersion(root)
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return flagsFromEnv(c, f.Getenv) }
	root.SetUsageTemplate(root.UsageTemplate() + envFlagsHelp)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		hint := fmt.Sprintf("see '%s --help'", c.CommandPath())
		if best := closestFlag(c, err); best != "" {
			hint = "did you mean " + best + "? " + hint
		}
		return withHint(ExitUsage, err, hint)
	})
	return root
}

// closestFlag is the flag of c a mistyped one (err: "unknown flag:
// --taget") was likely meant to be ("--target", or "-t (--target)" for
// --t), "" when none is near.
func closestFlag(c *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	if len(name) <= 2 {
		// too short to tell a typo: a shorthand given with two dashes
		if f := c.Flags().ShorthandLookup(name); len(name) == 1 && f != nil {
			return "-" + name + " (--" + f.Name + ")"
		}
		return ""
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if best := yamlstrict.Meant(name, names); best != "" {
		return "--" + best
	}
	return ""
}
