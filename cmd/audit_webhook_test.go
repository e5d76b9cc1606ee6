package cmd

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/checks"
	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/lab"
)

// webhookChecks are the checks an audit of a webhook receiver runs; every
// other one is skipped as not a webhook check (C28 needs --kill-cmd).
var webhookChecks = []string{"C03", "C06", "C09", "C10", "C11", "DK", "C25", "W01"}

// webhookAuditArgs audits the lab's webhook receiver at path, the effects
// read from its ledger per event id.
func webhookAuditArgs(target, path string, extra ...string) []string {
	args := []string{"audit", "--webhook", "standard", "POST", target + path,
		"-d", `{"type":"payment.succeeded","data":{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}}`,
		"--effects", "GET /charges?idempotency_key={{.Key}}", "--effects-path", "$.count",
		"--quiet-period", "20ms", "--format", "json"}
	return append(args, extra...)
}

var webhookEnv = map[string]string{"WEBHOOK_SECRET": lab.WebhookSecret}

// TestAuditWebhook: audit --webhook delivers signed events as a provider
// does; the correct receiver meets the webhook battery, and each seeded
// receiver bug (and the naive receiver) fails the checks that show it.
func TestAuditWebhook(t *testing.T) {
	t.Parallel()
	t.Run("correct", func(t *testing.T) {
		t.Parallel()
		target := startTestLab(t, memoryBackend())
		args := webhookAuditArgs(target, "/webhooks")
		code, sc, out := auditResult(t, runMain(t, webhookEnv, args...), args)
		var skip []string
		for _, c := range sc.Checks {
			if !strings.Contains(strings.Join(webhookChecks, ","), c.ID) {
				skip = append(skip, c.ID)
			}
		}
		wantScorecard(t, "correct receiver", sc, nil, nil, skip, out)
		if code != ExitOK || sc.Result != checks.Met {
			t.Errorf("correct receiver: exit %d, %s; want 0, met", code, sc.Result)
		}
		if w := checkResults(sc)["W01"]; w.JudgedBy != checks.ByEffects || !strings.Contains(w.Summary, "no effect") {
			t.Errorf("W01 = %s by %q: %q, want judged by the effects", w.Result, w.JudgedBy, w.Summary)
		}
		// a signature is a credential for its body: masked in the evidence
		if strings.Contains(out, `"Webhook-Signature": "v1,`) || !strings.Contains(out, `"Webhook-Signature": "`+redaction.Mask) {
			t.Errorf("the evidence does not mask the deliveries' signatures:\n%s", out)
		}
		// the secret signs every delivery and is written nowhere
		if strings.Contains(out, lab.WebhookSecret) || strings.Contains(out, strings.TrimPrefix(lab.WebhookSecret, "whsec_")) {
			t.Errorf("the signing secret is in the output:\n%s", out)
		}
	})
	t.Run("scenario file", func(t *testing.T) {
		t.Parallel()
		// the built-in's operation.webhook signs with the lab's secret
		// (its template's default) and its oracle counts the charges
		target := startTestLab(t, memoryBackend())
		args := []string{"audit", "webhooks", "--target", target, "--checks", "C03,W01", "--format", "json"}
		code, sc, out := auditResult(t, runMain(t, nil, args...), args)
		got := checkResults(sc)
		if code != ExitOK || got["C03"].Result != checks.Pass || got["W01"].Result != checks.Pass || got["W01"].JudgedBy != checks.ByEffects {
			t.Errorf("audit webhooks: exit %d, C03 %s, W01 %s by %q; want 0, pass, pass by the effects\n%s", code, got["C03"].Result, got["W01"].Result, got["W01"].JudgedBy, out)
		}
	})
	for _, c := range []struct {
		name, bug, path, checks string
		fails                   []string
		sev                     checks.Severity
	}{
		{"forged applied", "webhook-effect-before-verify", "/webhooks", "W01", []string{"W01"}, checks.Critical},
		{"500 on redelivery", "webhook-500-on-redelivery", "/webhooks", "C03,C09", []string{"C03", "C09"}, checks.High},
		{"dedupe by signature", "webhook-dedupe-by-signature", "/webhooks", "C03,C09", []string{"C03", "C09"}, checks.Critical},
		{"id after effect", "webhook-id-after-effect", "/webhooks", "C06", []string{"C06"}, checks.Critical},
		{"dedupe before verify", "webhook-dedupe-before-verify", "/webhooks", "W01,C03", []string{"W01"}, checks.High},
		{"naive receiver", "", "/naive/webhooks", "C03,C06,W01", []string{"C03", "C06"}, checks.Critical},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var bugs []string
			if c.bug != "" {
				bugs = []string{c.bug}
			}
			target := startTestLab(t, memoryBackend(), bugs...)
			args := webhookAuditArgs(target, c.path, "--checks", c.checks)
			code, sc, out := auditResult(t, runMain(t, webhookEnv, args...), args)
			if code != ExitFailed {
				t.Errorf("exit %d, want %d\n%s", code, ExitFailed, out)
			}
			got := checkResults(sc)
			for _, id := range strings.Split(c.checks, ",") {
				want := checks.Pass
				if strings.Contains(strings.Join(c.fails, ","), id) {
					want = checks.Fail
				}
				if r := got[id]; r.Result != want || (want == checks.Fail && r.Severity != c.sev) {
					t.Errorf("%s = %s %s (%s), want %s %s", id, r.Result, r.Severity, r.Summary, want, c.sev)
				}
			}
		})
	}
}

// TestAuditWebhookUsage: the webhook flags teach what is wrong.
func TestAuditWebhookUsage(t *testing.T) {
	t.Parallel()
	file := writeScenario(t, "name: x\noperation: {method: POST, path: /webhooks}\n")
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"audit", "--webhook", "standard", file, "--target", "http://127.0.0.1:1"}, "--webhook goes with METHOD URL"},
		{[]string{"audit", "--webhook", "standard", "--webhook-secret", "whsec_c2VjcmV0", "POST", "http://127.0.0.1:1/webhooks"}, "--webhook-secret: a literal secret"},
		{[]string{"audit", "--webhook", "custom", "POST", "http://127.0.0.1:1/webhooks"}, "operation.webhook.profile: custom"},
		{[]string{"audit", "--webhook", "paypal", "POST", "http://127.0.0.1:1/webhooks"}, "unknown provider profile"},
		{[]string{"audit", "--webhook-event", "push", "POST", "http://127.0.0.1:1/webhooks"}, "go with --webhook PROFILE"},
		{[]string{"audit", "--webhook-secret", `{{env "X"}}`, file, "--target", "http://127.0.0.1:1"}, "go with --webhook PROFILE"},
		{[]string{"audit", "--webhook", "standard", "--openapi", "spec.yaml", "--target", "http://127.0.0.1:1"}, "not both"},
	} {
		r := runMain(t, webhookEnv, c.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.says) {
			t.Errorf("idemcheck %s: exit %d, want %d saying %q\n%s", strings.Join(c.args, " "), r.code, ExitUsage, c.says, r.err)
		}
		if strings.Contains(r.err, "c2VjcmV0") {
			t.Errorf("a literal secret is echoed:\n%s", r.err)
		}
	}
}
