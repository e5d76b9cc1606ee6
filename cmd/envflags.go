package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envFlagsHelp ends every command's help: where else its flags come from.
const envFlagsHelp = `
Every flag can also be set in the environment as IDEMCHECK_<FLAG> (upper
case, dashes as underscores: IDEMCHECK_REQUEST_TIMEOUT=5s); a flag given on
the command line wins. The target is IDEMCHECK_TARGET, read by run and
audit FILE.
`

// oldSpelling annotates a hidden flag kept for an old spelling of another
// (aliasFlag); its value is the flag's one spelling now.
const oldSpelling = "idemcheck_old_spelling"

// envFlagName is the environment variable that sets flag name.
func envFlagName(name string) string {
	return "IDEMCHECK_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// flagsFromEnv notes each old spelling used, then sets each flag of c not given on the command line from its
// IDEMCHECK_<FLAG> variable. --target is left to the commands that read
// IDEMCHECK_TARGET themselves (run, audit FILE): in audit METHOD URL and
// bench it would send the request elsewhere than its URL says. A value
// that does not parse is a usage error naming the variable.
func flagsFromEnv(c *cobra.Command, getenv func(string) string) error {
	c.Flags().Visit(func(f *pflag.Flag) {
		if now := f.Annotations[oldSpelling]; len(now) > 0 {
			fmt.Fprintf(c.ErrOrStderr(), "note: --%s is an old spelling: use --%s, the one spelling in every command\n", f.Name, now[0])
		}
	})
	if getenv == nil {
		return nil
	}
	var err error
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Hidden || f.Name == "help" || f.Name == "target" {
			return
		}
		name := envFlagName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if e := c.Flags().Set(f.Name, v); e != nil {
			err = withHint(ExitUsage, fmt.Errorf("%s: %w", name, e), fmt.Sprintf("it sets --%s: see '%s --help', or unset it", f.Name, c.CommandPath()))
		}
	})
	return err
}
