package runner

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/internal/termsafe"
	"github.com/idemcheck/idemcheck/scenarios"
)

// DryRun writes what a run of sc would do (--dry-run): its targets, load,
// retries, faults with every parameter (a relative one said to be
// measured before the load), oracles and invariants, and its first requests
// rendered, secrets masked as DebugTransport masks them and as the
// reports do: every secret the run would send (registered in secrets, nil
// for a registry of its own: the targets' credentials, the values the
// templates read from getenv, credential headers) is scrubbed from every
// line, paths and bodies included. It sends nothing. Its error is a
// template of the operation that does not render.
func DryRun(ctx context.Context, w io.Writer, sc *scenarios.Scenario, targets []*url.URL, getenv func(string) string, first int, secrets *redaction.Secrets) error {
	k := newKeeper(secrets, targets, []scenarios.Request{sc.Operation.Request}, false)
	w, getenv = k.secrets.Writer(w), k.env(getenv)
	l := sc.Load
	termsafe.Fprintf(w, "== %s (dry run: nothing is sent)\n", sc.Name)
	for _, t := range targets {
		termsafe.Fprintf(w, "target %s\n", redaction.URL(t))
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
		termsafe.Fprintf(w, "fault: %s\n", faultParams(f))
	}
	for _, o := range sc.Oracles {
		termsafe.Fprintf(w, "oracle: %s\n", o.Name)
	}
	for _, inv := range sc.Invariants {
		termsafe.Fprintf(w, "invariant: %s %s\n", inv.Check, inv.Oracle)
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
		if p := sc.Operation.Publish; p != nil {
			body, err := t.Body(ctx, v)
			if err != nil {
				return err
			}
			if p.Subject != "" {
				termsafe.Fprintf(w, "> op %d: PUB %s %s: %s\n> %s\n", i, p.Subject, p.IDHeader, v.Key, oneLine(string(body)))
				continue
			}
			termsafe.Fprintf(w, "> op %d: XADD %s * %s %s %s %s\n", i, p.Stream, p.IDField, v.Key, p.BodyField, oneLine(string(body)))
			continue
		}
		req, err := t.Build(ctx, targets[0], v)
		if err != nil {
			return err
		}
		if h := sc.Operation.Key.Header; h != "" {
			req.Header.Set(h, v.Key)
		}
		k.authorize(req, 0)
		var b strings.Builder
		termsafe.Fprintf(&b, "> op %d: %s %s\n", i, req.Method, redaction.URL(req.URL))
		writeHeaders(&b, "> ", req.Header)
		if req.Body != nil {
			body, _ := io.ReadAll(io.LimitReader(req.Body, debugBody))
			termsafe.Fprintf(&b, "> %s\n", oneLine(string(body)))
		}
		io.WriteString(w, b.String())
	}
	return nil
}

// faultParams writes f with every parameter it sets, as a scenario
// writes them: "timeout at rate 0.05, after 0.5x (0.5 × the p50, measured
// before the load), attempts [1]".
func faultParams(f faults.Spec) string {
	if f.Kind == faults.KindNemesis {
		return nemesisParams(f)
	}
	if f.Kind == faults.KindConsumerCut {
		return fmt.Sprintf("consumer_cut: %g of the chunks cut, either way, at the proxy on %s (point the consumer there)", f.Rate, f.Listen)
	}
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

// nemesisParams writes a nemesis with every parameter, defaults named, its
// commands quoted as a shell reads them and their secrets masked
// (redact.Secrets.Command): "nemesis: stop kill -9 …, start …, at 40%
// (35%–45% by the seed), every 2s (±10% by the seed), ready GET /healthz
// within 30s (default)".
func nemesisParams(f faults.Spec) string {
	secrets := &redaction.Secrets{}
	var b strings.Builder
	fmt.Fprintf(&b, "nemesis: stop %s", secrets.Command(f.Stop))
	if len(f.Start) > 0 {
		fmt.Fprintf(&b, ", start %s", secrets.Command(f.Start))
	} else {
		b.WriteString(", no start command (the platform restarts the target)")
	}
	lo, hi := max(float64(f.At)-faults.NemesisJitter, 0.01), min(float64(f.At)+faults.NemesisJitter, 0.99)
	pct := func(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/10, 'f', -1, 64) + "%" }
	fmt.Fprintf(&b, ", at %s (%s–%s by the seed)", pct(float64(f.At)), pct(lo), pct(hi))
	if f.Every > 0 {
		fmt.Fprintf(&b, ", every %s (±10%% by the seed)", f.Every)
	} else {
		b.WriteString(", once")
	}
	timeout, how := f.ReadyTimeout, ""
	if timeout == 0 {
		timeout, how = faults.DefaultReadyTimeout, " (default)"
	}
	if f.Ready != "" {
		fmt.Fprintf(&b, ", ready %s within %s%s", f.Ready, timeout, how)
	} else {
		fmt.Fprintf(&b, ", no readiness request (ready when the start command ends), commands bounded by %s%s", timeout, how)
	}
	return b.String()
}
