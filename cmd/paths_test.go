package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesLinkBelowOut: a symbolic link planted in a shared --out
// (out/charges-lost-ack -> victim) is refused before any request is sent,
// and nothing is written through it.
func TestRunRefusesLinkBelowOut(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	root := t.TempDir()
	out, victim := filepath.Join(root, "out"), filepath.Join(root, "victim")
	for _, d := range []string{out, victim} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim, filepath.Join(out, "charges-lost-ack")); err != nil {
		t.Fatal(err)
	}
	r := runMain(t, nil, "run", "charges-lost-ack", "likes-duplicate", "--target", target, "--ops", "5", "--out", out, "--quiet")
	if r.code != ExitUsage || !strings.Contains(r.err, "symbolic link") {
		t.Errorf("exit %d, want %d and the link named\n%s", r.code, ExitUsage, r.err)
	}
	if left, _ := os.ReadDir(victim); len(left) != 0 {
		t.Errorf("files written through the link: %v", left)
	}
}
