package trial

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A link planted below --out (out/shared/run -> out/victim) is refused;
// --out itself may be a link the user chose.
func TestNoSymlinkBelow(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	out := filepath.Join(root, "out")
	victim := filepath.Join(root, "victim")
	for _, d := range []string{filepath.Join(out, "shared"), victim} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim, filepath.Join(out, "shared", "charges-lost-ack")); err != nil {
		t.Fatal(err)
	}
	if err := NoSymlinkBelow(out, filepath.Join(out, "shared", "charges-lost-ack")); !errors.Is(err, ErrSymlinkDir) {
		t.Errorf("a link below --out: %v, want ErrSymlinkDir", err)
	}
	if err := NoSymlinkBelow(out, filepath.Join(out, "shared", "other")); err != nil {
		t.Errorf("a directory not made yet: %v", err)
	}
	link := filepath.Join(root, "out-link")
	if err := os.Symlink(out, link); err != nil {
		t.Fatal(err)
	}
	if err := NoSymlinkBelow(link, filepath.Join(link, "shared")); err != nil {
		t.Errorf("--out itself a link: %v, want it allowed", err)
	}
	if err := NoSymlinkBelow(out, out); err != nil {
		t.Errorf("--out alone: %v", err)
	}
}
