package cmd

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

type validatingKey struct{}

// validating reports whether ctx is Validate's: a command checks its
// arguments and flags, then returns before doing anything.
func validating(ctx context.Context) bool {
	v, _ := ctx.Value(validatingKey{}).(bool)
	return v
}

// Validate checks that args (without the program name) are a valid
// idemcheck invocation: a known command, known flags with valid values,
// the arguments it takes. It runs nothing: it is for checking command
// lines written elsewhere (the Kubernetes manifests in deploy/). The
// environment is empty, so a flag that reads it (--shard auto/N) is
// checked for its form only.
func Validate(args []string) error {
	f := &Factory{Streams: Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, Getenv: func(string) string { return "" }}
	root := NewCmdRoot(f)
	var wrap func(c *cobra.Command)
	wrap = func(c *cobra.Command) {
		// Every command but run and report merge (which check their flags
		// in RunE, then stop when validating) does its work in RunE:
		// there, the checks of cobra (flags, arguments) are all there is
		// to validate.
		if c.RunE != nil && c.Name() != "run" && c.Name() != "merge" {
			c.RunE = func(*cobra.Command, []string) error { return nil }
		}
		if c.Run != nil {
			c.Run = func(*cobra.Command, []string) {}
		}
		for _, sub := range c.Commands() {
			wrap(sub)
		}
	}
	wrap(root)
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	return root.ExecuteContext(context.WithValue(context.Background(), validatingKey{}, true))
}
