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
// Left at "dev", the build info stamps it: the module version of
// 'go install github.com/idemcheck/idemcheck@v1.2.3', else the VCS
// revision a build from a clone records.
var Version = "dev"

// NewCmdVersion builds `idemcheck version`.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print idemcheck's version and the formats it reads and writes",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			_, err := fmt.Fprint(f.Streams.Out, versionText())
			return err
		},
	}
}

// setVersion makes 'idemcheck --version' print what 'idemcheck version'
// prints, and exit 0. Call it on the root command.
func setVersion(root *cobra.Command) {
	root.Version = resolvedVersion()
	root.SetVersionTemplate(versionText())
}

// versionText is what 'idemcheck version' prints: the version, the Go
// toolchain and platform, and the formats this binary reads and writes.
func versionText() string {
	return fmt.Sprintf("idemcheck %s (%s, %s/%s)\nhistory format %d, report format %d\n",
		resolvedVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH, history.FormatVersion, reports.FormatVersion)
}

// resolvedVersion is Version, or what the build info says when Version
// was not set at build time.
func resolvedVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if Version != "dev" || !ok {
		return Version
	}
	return versionOf(bi)
}

// versionOf reads a version from build info: the module's version when
// installed with 'go install …@version', else "dev" and the VCS revision
// ("dev (1a2b3c4d5e6f, modified)").
func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return "dev (" + rev + modified + ")"
}
