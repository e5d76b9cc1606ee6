package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/reports"
)

// Version is idemcheck's version, set at build time with
// -ldflags "-X github.com/idemcheck/idemcheck/cmd.Version=v1.2.3".
var Version = "dev"

// NewCmdVersion builds `idemcheck version`.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print idemcheck's version and the formats it reads and writes",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			v := Version
			if bi, ok := debug.ReadBuildInfo(); ok && v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
				v = bi.Main.Version
			}
			_, err := fmt.Fprintf(f.Streams.Out, "idemcheck %s (%s, %s/%s)\nhistory format %d, report format %d\n",
				v, runtime.Version(), runtime.GOOS, runtime.GOARCH, history.FormatVersion, reports.FormatVersion)
			return err
		},
	}
}
