package cmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/scenarios"
)

// NewCmdScenarios builds `idemcheck scenarios list|show`.
func NewCmdScenarios(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "scenarios",
		Short: "List and show the built-in scenarios",
		Long: `The built-in scenarios test the lab ('idemcheck lab'): each classic idempotency
failure as a naive variant (which must be caught: expect violation) and a
protected one (which must hold: expect pass). Copy one with
'idemcheck scenarios show NAME > my.yaml' as a start for your own API.`,
		Example: `  idemcheck scenarios list
  idemcheck scenarios show charges-lost-ack > charges.yaml`,
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			tw := tabwriter.NewWriter(f.Streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tEXPECT\tDESCRIPTION")
			for _, name := range scenarios.BuiltinNames() {
				sc, err := scenarios.Builtin(name)
				if err != nil {
					return withCode(ExitRuntime, err)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", name, sc.Expect, firstLine(sc.Description))
			}
			return tw.Flush()
		},
	}
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in scenario's YAML",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			b, err := scenarios.BuiltinYAML(args[0])
			if err != nil {
				return withHint(ExitUsage, err, "list them with 'idemcheck scenarios list'")
			}
			_, err = f.Streams.Out.Write(b)
			return err
		},
	}
	c.AddCommand(list, show)
	return c
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > 90 {
		s = s[:87] + "..."
	}
	return s
}
