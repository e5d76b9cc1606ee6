package runner

import (
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// secret is planted in what a test sends; it must come out of nothing the
// runner records.
const secret = "Rn7SecretZ"

// withUser is u with userinfo user:pass.
func withUser(u *url.URL, user, pass string) *url.URL {
	c := *u
	c.User = url.UserPassword(user, pass)
	return &c
}

// The credentials of a target URL go with every request the runner sends
// (setup, operation.before, attempts, replays) as Basic authorization,
// unless the request sets Authorization itself.
func TestTargetCredentialsOnEveryRequest(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"version":3}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ch_1"}`)
	})
	target := withUser(s.URL, "bob", secret)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 4, Concurrency: 2}
		sc.Setup = []scenarios.Request{{Method: "PUT", Path: "/reset"}}
		sc.Operation.Before = &scenarios.Capture{Request: scenarios.Request{Path: "/accounts/a"}, Vars: map[string]string{"version": "$.version"}}
		sc.Operation.Replay = &scenarios.Replay{Count: 1}
	})
	if err := Setup(runCtx(t), sc, Options{Target: target}); err != nil {
		t.Fatalf("Setup() = %v", err)
	}
	h, err := Run(runCtx(t), sc, Options{Target: target, Seed: 3})
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("bob:"+secret))
	kinds := map[string]int{}
	for _, r := range s.requests() {
		kinds[r.Method]++
		if r.Auth != want {
			t.Errorf("%s %s: Authorization %q, want %q", r.Method, r.Path, r.Auth, want)
		}
	}
	if kinds["PUT"] != 1 || kinds["GET"] != 4 || kinds["POST"] != 8 {
		t.Errorf("requests by method %v, want 1 setup PUT, 4 before GETs, 8 POSTs (4 ops and 4 replays)", kinds)
	}
	if strings.Contains(h.Meta.Target, secret) || !strings.Contains(h.Meta.Target, "bob:xxxxx@") {
		t.Errorf("Meta.Target = %q, want the password masked", h.Meta.Target)
	}

	// An explicit Authorization header wins over the URL's credentials.
	s2 := newServer(t, nil)
	sc = scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 2, Concurrency: 1}
		sc.Operation.Headers = map[string]string{"Authorization": "Bearer own"}
	})
	if _, err := Run(runCtx(t), sc, Options{Target: withUser(s2.URL, "bob", secret), Seed: 3}); err != nil {
		t.Fatal(err)
	}
	for _, r := range s2.requests() {
		if r.Auth != "Bearer own" {
			t.Errorf("Authorization %q, want the scenario's own Bearer own", r.Auth)
		}
	}
}

// A server that reflects the credentials it was sent, in its 201 bodies
// (kept as fields) and its 500 error pages (kept as evidence, past the
// evidence cap too), puts none of them into the history.
func TestReflectedSecretsScrubbed(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int64, _ []byte) {
		reflect := r.Header.Get("Authorization") + " " + r.Header.Get("X-Api-Key") + " " + r.Header.Get("X-Signature")
		if n%2 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
			// the secret across the evidence cut, then again after it
			io.WriteString(w, strings.Repeat("e", maxEvidence-5)+reflect+" "+reflect)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ch_1","auth":"`+reflect+`"}`)
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 10, Concurrency: 2}
		sc.Retry.Attempts = 2
		sc.Response.Fields = map[string]string{"auth": "$.auth"}
		sc.Operation.Headers = map[string]string{
			"Authorization": `Bearer {{env "API_TOKEN"}}`,
			"X-Api-Key":     "static-" + secret,
			"X-Signature":   "sig-{{.User}}-" + secret + "x",
		}
		sc.Users = []string{"alice"}
		sc.Faults = []scenarios.Fault{{Kind: faults.KindDuplicate, Rate: 0.5, Copies: 2}}
	})
	env := func(k string) string { return map[string]string{"API_TOKEN": "tok-" + secret}[k] }
	h, err := Run(runCtx(t), sc, Options{Target: withUser(s.URL, "u", "pw-"+secret), Seed: 5, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	bodies, fields := 0, 0
	for _, a := range h.Attempts {
		if a.Body != "" {
			bodies++
		}
		if a.Fields["auth"] != "" {
			fields++
		}
		for _, text := range append([]string{a.Body, a.Err, a.Fields["auth"]}, answerTexts(a)...) {
			if strings.Contains(text, secret) {
				t.Errorf("attempt %d.%d keeps the secret: %q", a.Op, a.N, text)
			}
		}
	}
	if bodies == 0 || fields == 0 {
		t.Errorf("%d evidence bodies and %d fields kept, want some of each (the test proves nothing otherwise)", bodies, fields)
	}
}

func answerTexts(a history.Attempt) []string {
	var out []string
	for _, an := range a.Answers {
		out = append(out, an.Err)
		for _, v := range an.Fields {
			out = append(out, v)
		}
	}
	return out
}

// A target's query values are masked in Meta, and its path too when the
// run redacts paths; its path segments are then scrubbed from answers.
func TestMetaTargetRedacted(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "no tenant at "+r.URL.Path)
	})
	base := *s.URL
	base.Path = "/t/" + secret
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 2, Concurrency: 1}
		sc.Retry.Attempts = 1
	})
	h, err := Run(runCtx(t), sc, Options{Target: &base, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Meta.Target, secret) {
		t.Errorf("Meta.Target = %q: without RedactPath the path is shown", h.Meta.Target)
	}
	h, err = Run(runCtx(t), sc, Options{Target: &base, Targets: []*url.URL{&base, s.URL}, Seed: 1, RedactPath: true})
	if err != nil {
		t.Fatal(err)
	}
	texts := append([]string{h.Meta.Target}, h.Meta.Targets...)
	for _, a := range h.Attempts {
		texts = append(texts, a.Body)
	}
	for _, text := range texts {
		if strings.Contains(text, secret) {
			t.Errorf("with RedactPath, %q shows the path's secret", text)
		}
	}
	if got := redactTarget(&url.URL{Scheme: "http", Host: "h", Path: "/a", RawQuery: "token=" + secret}, false); got != "http://h/a?token=xxxxx" {
		t.Errorf("redactTarget(query) = %q", got)
	}
}

// drop_ack at rate 1 hides every answer the target gave: the run is not
// "target unreachable". Real failures among injected ones still are.
func TestInjectedFailuresDoNotAccuseTarget(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	for _, kind := range []string{faults.KindDropAck, faults.KindReset} {
		sc := scenario(func(sc *scenarios.Scenario) {
			sc.Load = scenarios.Load{Ops: 5, Concurrency: 2}
			sc.Retry.Attempts = 2
			sc.Faults = []scenarios.Fault{{Kind: kind, Rate: 1}}
		})
		h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 2})
		if err != nil {
			t.Errorf("%s at rate 1: Run() = %v, want no error", kind, err)
		}
		for _, a := range h.Attempts {
			if a.Outcome == history.OK {
				t.Errorf("%s at rate 1: attempt %+v got an answer", kind, a)
			}
		}
	}
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 5, Concurrency: 2}
		sc.Faults = []scenarios.Fault{{Kind: faults.KindReset, Rate: 0.5}}
	})
	_, err := Run(runCtx(t), sc, Options{Target: &url.URL{Scheme: "http", Host: closedAddr(t)}, Seed: 2})
	if !errors.Is(err, ErrTarget) {
		t.Errorf("resets on a closed port: Run() = %v, want ErrTarget", err)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
