package cmd

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	redaction "github.com/idemcheck/idemcheck/internal/redact"
)

// notRerun are the flags that do not change what a run sends: where its
// output goes and how it is shown. A rerun line leaves them out, and
// gives --seed and --key-nonce itself.
var notRerun = map[string]bool{
	"out": true, "format": true, "report": true, "quiet": true, "progress": true,
	"metrics-addr": true, "metrics-push": true, "metrics-every": true, "metrics-label": true, "http-debug": true, "dry-run": true, "seed": true, "key-nonce": true,
	"phase": true, "shards": true, "shard": true, "start-in": true, "wait": true,
	"junit-inconclusive": true, "spill-after": true,
}

// urlFlags carry URLs or DSNs, redacted in a rerun line.
var urlFlags = map[string]bool{"target": true, "store": true, "ledger": true}

// rerunLine is the command line that repeats a run made by c: the same
// keys, faults and load. It names the scenario (args), the flags given
// that shape what is sent, secrets redacted, then the seed and key nonce
// the run used; extra (flags and values, quoted) come before them.
func rerunLine(c *cobra.Command, args []string, seed, nonce uint64, extra ...string) string {
	parts := []string{"idemcheck", c.Name()}
	var red redaction.Options
	if f := c.Flags().Lookup("redact-path"); f != nil && f.Value.String() == "true" {
		red.Path = true // the run masks the targets' paths: so does its rerun line
	}
	for _, a := range args {
		parts = append(parts, shellArg(a))
	}
	c.Flags().Visit(func(f *pflag.Flag) {
		if notRerun[f.Name] {
			return
		}
		values := []string{f.Value.String()}
		if s, ok := f.Value.(pflag.SliceValue); ok {
			values = s.GetSlice()
		}
		if f.Value.Type() == "bool" {
			if values[0] == "true" {
				parts = append(parts, "--"+f.Name)
			} else {
				parts = append(parts, "--"+f.Name+"=false")
			}
			return
		}
		for _, v := range values {
			if urlFlags[f.Name] {
				v = red.String(v)
			}
			parts = append(parts, "--"+f.Name, shellArg(v))
		}
	})
	parts = append(parts, extra...)
	parts = append(parts, "--seed", fmt.Sprint(seed), "--key-nonce", fmt.Sprint(nonce))
	return strings.Join(parts, " ")
}

var plainArg = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellArg is s quoted for a POSIX shell where it needs to be.
func shellArg(s string) string {
	if plainArg.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
