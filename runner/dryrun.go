package runner

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/scenarios"
)

// DryRun writes what a run of sc would do (--dry-run): its targets, load,
// retries, faults with every parameter (a relative one said to be
// measured before the load), oracles and invariants, and its first requests
// rendered, secrets masked as DebugTransport masks them; it sends
// nothing. Its error is a template of the operation that does not render.
func DryRun(ctx context.Context, w io.Writer, sc *scenarios.Scenario, targets []*url.URL, getenv func(string) string, first int) error {
	l := sc.Load
	fmt.Fprintf(w, "== %s (dry run: nothing is sent)\n", sc.Name)
	for _, t := range targets {
		fmt.Fprintf(w, "target %s\n", redaction.URL(t))
	}
	var bound []string
	if l.Ops > 0 {
		bound = append(bound, fmt.Sprintf("%d ops", l.Ops))
	}
	if l.Duration > 0 {
		bound = append(bound, fmt.Sprintf("for %s", time.Duration(l.Duration)))
	}
	size := strings.Join(bound, " or ") // whichever comes first
	switch {
	case len(l.Stages) > 0:
		writeStages(w, l, size)
	case l.Rate > 0:
		fmt.Fprintf(w, "load: %s, open model at %g ops/s\n", size, float64(l.Rate))
	default:
		fmt.Fprintf(w, "load: %s, closed model with %d workers\n", size, l.Concurrency)
	}
	fmt.Fprintf(w, "retry: %d attempts, on %s\n", sc.Retry.Attempts, strings.Join(sc.Retry.On, ", "))
	for _, f := range sc.Faults {
		fmt.Fprintf(w, "fault: %s\n", faultParams(f))
	}
	for _, o := range sc.Oracles {
		fmt.Fprintf(w, "oracle: %s\n", o.Name)
	}
	for _, inv := range sc.Invariants {
		fmt.Fprintf(w, "invariant: %s %s\n", inv.Check, inv.Oracle)
	}
	t, err := scenarios.NewTemplate("operation", sc.Operation.Request, http.MethodPost, getenv)
	if err != nil {
		return err
	}
	for i := 0; i < first && (l.Ops == 0 || i < l.Ops); i++ {
		v := scenarios.Vars{Key: fmt.Sprintf("<key of op %d>", i), Seq: i, Attempt: 1, Run: "<run>"}
		if len(sc.Users) > 0 {
			v.User = sc.Users[i%len(sc.Users)]
		}
		req, err := t.Build(ctx, targets[0], v)
		if err != nil {
			return err
		}
		if h := sc.Operation.Key.Header; h != "" {
			req.Header.Set(h, v.Key)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "> op %d: %s %s\n", i, req.Method, redaction.URL(req.URL))
		writeHeaders(&b, "> ", req.Header)
		if req.Body != nil {
			body, _ := io.ReadAll(io.LimitReader(req.Body, debugBody))
			fmt.Fprintf(&b, "> %s\n", oneLine(string(body)))
		}
		io.WriteString(w, b.String())
	}
	return nil
}

// faultParams writes f with every parameter it sets, as a scenario
// writes them: "timeout at rate 0.05, after 0.5x (0.5 × the p50, measured
// before the load), attempts [1]".
func faultParams(f faults.Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s at rate %g", f.Kind, f.Rate)
	for _, p := range faults.ParamsOf(f.Kind) {
		if p.Name == "rate" || !p.IsSet(f) {
			continue
		}
		switch p.Name {
		case "after":
			if !f.Relative.IsZero() {
				fmt.Fprintf(&b, ", after %s (%s, measured before the load)", f.Relative, f.Relative.Explain())
				continue
			}
			fmt.Fprintf(&b, ", after %s (fixed)", f.After)
		case "copies":
			fmt.Fprintf(&b, ", copies %d", f.Copies)
		case "delay":
			fmt.Fprintf(&b, ", delay %s", f.Delay)
		case "attempts":
			fmt.Fprintf(&b, ", attempts %v", f.Attempts)
		default:
			fmt.Fprintf(&b, ", %s set", p.Name)
		}
	}
	if f.Kind == faults.KindDuplicate && f.Copies == 0 {
		b.WriteString(", copies 2")
	}
	return b.String()
}
