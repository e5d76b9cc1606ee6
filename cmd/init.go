package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/scenarios"
)

// InitOptions are the inputs of `idemcheck init`.
type InitOptions struct {
	Streams Streams
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
	opts := &InitOptions{Streams: f.Streams}
	c := &cobra.Command{
		Use:   "init METHOD URL",
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
describes every field.`,
		Example: `  # a charge endpoint with a count endpoint per key
  idemcheck init POST https://staging.example.com/v1/charges \
    -d '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}' \
    -H 'Authorization: Bearer {{env "API_TOKEN"}}' \
    --effects '/internal/charges?idempotency_key={{.Key}}' --file charges.yaml
  API_TOKEN=sk_test_... idemcheck run charges.yaml

  # the key in the body instead of a header
  idemcheck init POST http://127.0.0.1:8080/likes -d '{"post":"p1"}' --key-field op_id`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
				return withHint(ExitUsage, fmt.Errorf("init takes METHOD and URL, got %d arguments", len(args)),
					"e.g. idemcheck init POST https://staging.example.com/v1/charges -d '{\"amount\":100}'")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
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
	fl.BoolVar(&opts.Force, "force", false, "overwrite --file if it exists")
	fl.VarP(fl.Lookup("file").Value, "output", "o", "same as --file")
	_ = fl.MarkHidden("output")
	_ = fl.SetAnnotation("output", oldSpelling, []string{"file"})
	return c
}

// secretHeader names headers that carry credentials.
var secretHeader = regexp.MustCompile(`(?i)^(authorization|proxy-authorization|cookie|x-api-key|api-key|apikey|x-auth-token|.*token.*|.*secret.*|.*password.*)$`)

func initRun(_ context.Context, opts *InitOptions) error {
	op, err := opts.Request.resolve(opts.Method, opts.URL)
	if err != nil {
		return err
	}
	for name, value := range op.Headers {
		if secretHeader.MatchString(name) && !strings.Contains(value, "{{") {
			return withHint(ExitUsage, fmt.Errorf("-H %s holds a literal value: the scenario file would keep the secret", name),
				fmt.Sprintf(`take it from the environment: -H '%s: Bearer {{env "API_TOKEN"}}'`, name))
		}
	}
	if op.Base.User != nil {
		return withHint(ExitUsage, errors.New("the URL holds credentials: the scenario file would keep them"),
			`take them from the environment in a header: -H 'Authorization: Basic {{env "API_BASIC"}}'`)
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
	// the oracle's reads carry the operation's credentials, nothing else
	for k, v := range op.Headers {
		if secretHeader.MatchString(k) {
			st.Credentials[k] = v
		}
	}
	text, err := scenarios.StarterYAML(st)
	if err != nil {
		return err
	}
	if _, err := scenarios.Parse(initSource(opts.Output), text); err != nil {
		return withCode(ExitUsage, err)
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
