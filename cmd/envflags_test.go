package cmd

import (
	"strings"
	"testing"
)

// Every flag can be set as IDEMCHECK_<FLAG>; the command line wins, and a
// value that does not parse names its variable.
func TestFlagsFromEnvironment(t *testing.T) {
	t.Parallel()
	args := []string{"run", "charges-lost-ack", "--dry-run", "--target", "http://127.0.0.1:1"}
	env := map[string]string{"IDEMCHECK_OPS": "7", "IDEMCHECK_REQUEST_TIMEOUT": "3s"}
	r := runMain(t, env, args...)
	if r.code != ExitOK || !strings.Contains(r.out+r.err, "load: 7 ops") {
		t.Errorf("IDEMCHECK_OPS=7: exit %d, want the dry run to plan 7 ops\n%s%s", r.code, r.out, r.err)
	}
	r = runMain(t, env, append(args, "--ops", "9")...)
	if r.code != ExitOK || !strings.Contains(r.out+r.err, "load: 9 ops") {
		t.Errorf("--ops 9 with IDEMCHECK_OPS=7: exit %d, want the flag to win\n%s%s", r.code, r.out, r.err)
	}
	r = runMain(t, map[string]string{"IDEMCHECK_OPS": "seven"}, args...)
	if r.code != ExitUsage || !strings.Contains(r.err, "IDEMCHECK_OPS") || !strings.Contains(r.err, "--ops") {
		t.Errorf("IDEMCHECK_OPS=seven: exit %d, want %d naming the variable and its flag\n%s", r.code, ExitUsage, r.err)
	}
	// IDEMCHECK_TARGET is no --target of audit METHOD URL: it would send
	// the request elsewhere than its URL says.
	r = runMain(t, map[string]string{"IDEMCHECK_TARGET": "http://127.0.0.1:2"}, "audit", "POST", "http://127.0.0.1:1/charges", "--dry-run")
	if strings.Contains(r.out+r.err, "127.0.0.1:2") {
		t.Errorf("IDEMCHECK_TARGET redirected audit METHOD URL:\n%s%s", r.out, r.err)
	}
}

// The old spelling of a listening address works and says which is the one.
func TestOldSpellingSaysSo(t *testing.T) {
	t.Parallel()
	r := runMain(t, nil, "lab", "--addr", "127.0.0.1:0", "--bug", "nope")
	if r.code != ExitUsage || !strings.Contains(r.err, "use --listen") {
		t.Errorf("lab --addr: exit %d, want the usage error and a line naming --listen\n%s", r.code, r.err)
	}
}
