package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/internal/termsafe"
	"github.com/idemcheck/idemcheck/scenarios"
)

// InitOptions are the inputs of `idemcheck init`.
type InitOptions struct {
	Streams Streams
	Getenv  func(string) string
	// API is --openapi and the flags of its plan: a scenario for each
	// planned operation, written into Dir.
	API     openAPIFlags
	Dir     string
	Method  string
	URL     string
	Request requestFlags
	// Effects is the path (or same-host URL) of a request, GET unless a
	// method comes first ('GET /path'), that answers one key's effect
	// count; a template that uses {{.Key}}.
	Effects string
	// EffectsValue is the JSONPath to the count in its answer.
	EffectsValue string
	Name         string
	Output       string // "-" or "": stdout
	Force        bool
}

// NewCmdInit builds `idemcheck init`.
func NewCmdInit(f *Factory, runF func(context.Context, *InitOptions) error) *cobra.Command {
	opts := &InitOptions{Streams: f.Streams, Getenv: f.Getenv}
	c := &cobra.Command{
		Use:   "init METHOD URL | init --openapi SPEC --out DIR",
		Short: "Write a starting scenario for your own API",
		Long: `Init writes a scenario file for one operation of your API, from the same
flags as a request on the command line: the method and URL, the body (-d), headers (-H),
and where the idempotency key goes (--key-header, default Idempotency-Key, or
--key-field for a JSON body field). With --effects, the path of a GET that
answers how many effects (charges, orders) one key made, the scenario checks
exactly_once as well as same_response; without it, only same_response, and
the file says where to add an oracle.

The file is checked as 'idemcheck run' would check it before it is written.
Secrets stay out of it: a header such as Authorization must take its value
from the environment, -H 'Authorization: Bearer {{env "API_TOKEN"}}'.
Its timeout fault is relative to the API's latency (after: 0.5x, half the
p50 that 'idemcheck run' measures with a few plain requests before the
load), so that it fires on a fast API as on a slow one; init itself sends
nothing. Edit the load, faults and thresholds to taste; docs/scenario.md
describes every field.

With --openapi, init writes one scenario per operation of an OpenAPI
document into --out DIR, planned as 'audit --openapi' plans them (docs/audit.md):
the key the document declares, the body from its example or schema, the
credentials of --auth (which must come from the environment), and an
effects oracle where a link of the operation's answer names a read-back.`,
		Example: `  # a charge endpoint with a count endpoint per key
  idemcheck init POST https://staging.example.com/v1/charges \
    -d '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}' \
    -H 'Authorization: Bearer {{env "API_TOKEN"}}' \
    --effects '/internal/charges?idempotency_key={{.Key}}' --file charges.yaml
  API_TOKEN=sk_test_... idemcheck run charges.yaml

  # the key in the body instead of a header
  idemcheck init POST http://127.0.0.1:8080/likes -d '{"post":"p1"}' --key-field op_id

  # a scenario for every operation of an OpenAPI document
  idemcheck init --openapi http://127.0.0.1:8080/openapi.json --auth 'bearerAuth={{env "API_TOKEN"}}' --out scenarios/`,
		Args: func(c *cobra.Command, args []string) error {
			if opts.API.Spec != "" {
				if len(args) > 0 {
					return withHint(ExitUsage, errors.New("--openapi takes no METHOD URL: the operations come from the document"),
						"idemcheck init --openapi spec.yaml --out scenarios/")
				}
				return nil
			}
			if len(args) != 2 {
				return withHint(ExitUsage, fmt.Errorf("init takes METHOD and URL, got %d arguments", len(args)),
					"e.g. idemcheck init POST https://staging.example.com/v1/charges -d '{\"amount\":100}'")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.API.check(); err != nil {
				return err
			}
			if opts.API.Spec != "" {
				if runF != nil {
					return runF(c.Context(), opts)
				}
				return initAPIRun(c.Context(), opts)
			}
			if opts.Dir != "" {
				return usageError("--out DIR goes with --openapi: for one operation, --file names the scenario file")
			}
			opts.Method, opts.URL = args[0], args[1]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return initRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	opts.Request.register(fl)
	fl.StringVar(&opts.Effects, "effects", "", "a request that answers one key's effect count, as a path (or a URL on the same host) with {{.Key}}, a method first if not GET: 'GET /internal/charges?idempotency_key={{.Key}}'")
	fl.StringVar(&opts.EffectsValue, "effects-path", "$.count", "the JSONPath to the count in the --effects answer (as audit's --effects-path)")
	fl.StringVar(&opts.Name, "name", "", "the scenario's name (default: from the method and path, e.g. post-v1-charges)")
	fl.StringVar(&opts.Output, "file", "", "the scenario file to write; stdout when not given (-o/--out is a directory in every command)")
	fl.BoolVar(&opts.Force, "force", false, "overwrite --file (or the files in --out) if it exists")
	opts.API.register(fl, "init")
	fl.StringVar(&opts.Dir, "out", "", "with --openapi: the directory to write a scenario per operation into (created if need be)")
	fl.VarP(fl.Lookup("file").Value, "output", "o", "same as --file")
	_ = fl.MarkHidden("output")
	_ = fl.SetAnnotation("output", oldSpelling, []string{"file"})
	return c
}

func initRun(_ context.Context, opts *InitOptions) error {
	op, err := opts.Request.resolve(opts.Method, opts.URL)
	if err != nil {
		return err
	}
	if err := errors.Join(scenarios.LiteralCredentials(op.Headers), scenarios.URLCredentials(op.Base)); err != nil {
		return withCode(ExitUsage, err)
	}
	name := opts.Name
	if name == "" {
		name = scenarios.StarterName(op.Method, op.Path)
	}
	method, effects, err := op.EffectsPath(opts.Effects)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	st := scenarios.Starter{Name: name, Request: scenarios.Request{Method: op.Method, Path: op.Path, Headers: op.Headers, Body: op.Body},
		Key: op.Key, Targets: op.Targets, Effects: effects, EffectsMethod: method, EffectsValue: opts.EffectsValue, Credentials: map[string]string{}}
	if len(st.Targets) == 0 {
		st.Targets = []string{op.Base.String()}
	}
	st.Credentials = scenarios.Credentials(op.Headers)
	text, err := scenarios.StarterText(initSource(opts.Output), st)
	if err != nil {
		return err
	}
	if opts.Output == "" || opts.Output == "-" {
		_, err := opts.Streams.Out.Write(text)
		return err
	}
	if _, err := os.Stat(opts.Output); err == nil && !opts.Force {
		return withHint(ExitUsage, fmt.Errorf("%s exists", opts.Output), "choose another --file, or --force to overwrite it")
	}
	if err := writeFile(opts.Output, func(f *os.File) error { _, err := f.Write(text); return err }); err != nil {
		return withCode(ExitRuntime, err)
	}
	fmt.Fprintf(opts.Streams.Err, "wrote %s; run it with: idemcheck run %s\n", opts.Output, opts.Output)
	return nil
}

func initSource(out string) string {
	if out == "" || out == "-" {
		return "init"
	}
	return out
}

// initAPIRun writes a scenario per operation of the --openapi document.
func initAPIRun(ctx context.Context, opts *InitOptions) error {
	switch {
	case opts.Dir == "":
		return withHint(ExitUsage, errors.New("--openapi writes a scenario per operation: give the directory with --out DIR"), "idemcheck init --openapi spec.yaml --out scenarios/")
	case opts.Request.Data != "" || opts.Effects != "" || opts.Output != "" || opts.Name != "":
		return withHint(ExitUsage, errors.New("-d, --effects, --file and --name are per operation"), "give bodies and effects read-backs per operation in --fixtures (docs/audit.md)")
	}
	p, err := planAPI(ctx, opts.API, opts.Request, opts.Getenv, http.DefaultTransport)
	if err != nil {
		return err
	}
	if err := errors.Join(scenarios.LiteralAuth(opts.API.Auth), scenarios.URLCredentials(p.Base)); err != nil {
		return withCode(ExitUsage, err)
	}
	given, err := scenarios.ParseHeaders("-H", opts.Request.Headers)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	sts, chained, err := p.Starters(given)
	if err != nil {
		return err
	}
	type file struct {
		path, op string
		text     []byte
	}
	var files []file
	for _, st := range sts {
		path := filepath.Join(opts.Dir, st.Name+".yaml")
		text, err := scenarios.StarterText(path, st.Starter)
		if err != nil {
			return fmt.Errorf("%s: %w", st.Op.Name(), err)
		}
		if _, err := os.Stat(path); err == nil && !opts.Force {
			return withHint(ExitUsage, fmt.Errorf("%s exists", path), "choose another --out, or --force to overwrite")
		}
		files = append(files, file{path, st.Op.Name(), text})
	}
	if len(files) == 0 {
		for _, line := range chained {
			termsafe.Fprintf(opts.Streams.Err, "%s\n", line)
		}
		return withHint(ExitUsage, errors.New("no scenario written: every operation's path takes a parameter from another's answer"), "give the path parameters in --fixtures (path: {NAME: VALUE})")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return withCode(ExitRuntime, err)
	}
	for _, f := range files {
		if err := writeFile(f.path, func(out *os.File) error { _, err := out.Write(f.text); return err }); err != nil {
			return withCode(ExitRuntime, err)
		}
		termsafe.Fprintf(opts.Streams.Err, "wrote %s (%s)\n", f.path, f.op)
	}
	for _, s := range p.Skipped {
		termsafe.Fprintf(opts.Streams.Err, "left out %s: %s%s\n", s.Name(), s.Reason, at(s.Pointer))
	}
	for _, line := range chained {
		termsafe.Fprintf(opts.Streams.Err, "%s\n", line)
	}
	fmt.Fprintf(opts.Streams.Err, "%d scenarios in %s; run one with: idemcheck run %s\n", len(files), opts.Dir, files[0].path)
	return nil
}

func at(ptr string) string {
	if ptr == "" {
		return ""
	}
	return " [" + ptr + "]"
}
