package scenarios

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/yamlstrict"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// BuiltinNames lists the built-in scenarios, sorted.
func BuiltinNames() []string {
	entries, _ := fs.ReadDir(builtinFS, "builtin")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// BuiltinYAML returns the source of a built-in scenario, as shipped.
func BuiltinYAML(name string) ([]byte, error) {
	if !slices.Contains(BuiltinNames(), name) {
		return nil, unknownBuiltin(name)
	}
	return builtinFS.ReadFile(path.Join("builtin", name+".yaml"))
}

// Builtin loads a built-in scenario by name; its Source is "builtin:NAME".
func Builtin(name string) (*Scenario, error) {
	data, err := BuiltinYAML(name)
	if err != nil {
		return nil, err
	}
	return Parse("builtin:"+name, data)
}

func unknownBuiltin(name string) error {
	names := BuiltinNames()
	hint := "built-ins: " + strings.Join(names, ", ")
	if best, ok := yamlstrict.Closest(name, names); ok {
		hint = "did you mean " + best + "? " + hint
	}
	return Diagnostics{{
		Source:  name,
		Message: fmt.Sprintf("no scenario file and no built-in scenario named %q", name),
		Hint:    hint,
	}}
}

// Resolve loads a scenario named on the command line: a file when arg
// names an existing file or ends in .yaml or .yml, else a built-in.
func Resolve(arg string) (*Scenario, error) {
	return ResolveContext(context.Background(), arg)
}

// ResolveContext is Resolve, reading a file as LoadFileContext does: at
// most MaxFileSize bytes, until ctx ends.
func ResolveContext(ctx context.Context, arg string) (*Scenario, error) {
	ext := strings.ToLower(path.Ext(arg))
	if ext == ".yaml" || ext == ".yml" {
		return LoadFileContext(ctx, arg)
	}
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return LoadFileContext(ctx, arg)
	}
	if !slices.Contains(BuiltinNames(), arg) {
		return nil, unknownBuiltin(arg)
	}
	return Builtin(arg)
}

// showcaseFirst are the built-ins Showcase lists first, in this order.
var showcaseFirst = []string{"charges-lost-ack", "charges-timeout", "likes-duplicate", "debit-cas"}

// Showcase lists the protected built-ins in the order the demo shows
// them: the classic four first (a lost acknowledgement, a client timeout,
// duplicate sends, a compare-and-set debit), then every other. Each is a
// pair with its naive variant when it has one (HasNaive).
func Showcase() []string {
	out := slices.Clone(showcaseFirst)
	for _, n := range BuiltinNames() {
		if !strings.HasSuffix(n, "-naive") && !slices.Contains(out, n) && !QueueBuiltin(n) {
			out = append(out, n)
		}
	}
	return out
}

// QueueBuiltin reports whether the built-in name publishes to a queue
// (operation.publish): it needs a broker (--target) and the lab's
// consumers (idemcheck lab --consumer), so the demo leaves it out.
func QueueBuiltin(name string) bool {
	sc, err := Builtin(name)
	return err == nil && sc.IsQueue()
}

// QueuePairs are the built-in pairs that publish to a broker of
// broker's scheme (a URL), leaving out those with a consumer_cut (the
// consumer must be pointed at its proxy): the demo runs them when it is
// given a broker. None for a URL that names no broker.
func QueuePairs(broker string) []string {
	u, err := url.Parse(broker)
	if err != nil || QueueSchemes[u.Scheme] == "" {
		return nil
	}
	var out []string
	for _, n := range BuiltinNames() {
		sc, err := Builtin(n)
		if err != nil || !sc.IsQueue() || strings.HasSuffix(n, "-naive") || brokerTakes(u.Scheme) != sc.Operation.Publish.where() ||
			slices.ContainsFunc(sc.Faults, func(f Fault) bool { return f.Kind == faults.KindConsumerCut }) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// HasNaive reports whether the built-in name has a naive variant, the
// built-in NAME-naive: the same load and faults against an endpoint
// without the protection.
func HasNaive(name string) bool { return slices.Contains(BuiltinNames(), name+"-naive") }

// ShowcaseRun is one scenario the demo runs: a pair of Showcase and its
// variant ("naive" or "protected"), and the built-in scenario's name.
type ShowcaseRun struct{ Pair, Variant, Name string }

// ShowcaseRuns are the scenarios the demo runs for pairs, in order: each
// pair's naive variant (when it has one), then its protected one.
func ShowcaseRuns(pairs []string) []ShowcaseRun {
	var out []ShowcaseRun
	for _, p := range pairs {
		if HasNaive(p) {
			out = append(out, ShowcaseRun{p, "naive", p + "-naive"})
		}
		out = append(out, ShowcaseRun{p, "protected", p})
	}
	return out
}
