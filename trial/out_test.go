package trial

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/scenarios"
)

func TestDirNames(t *testing.T) {
	t.Parallel()
	got := DirNames([]string{"../x", "pay", "Pay", "pay", "", "a/b c", ".hidden.", strings.Repeat("n", 120)})
	want := []string{"x", "pay", "Pay-2", "pay-3", "scenario", "a-b-c", "hidden", strings.Repeat("n", 100)}
	if !slices.Equal(got, want) {
		t.Errorf("DirNames = %q, want %q", got, want)
	}
}

// Two scenarios of one name are two runs: the second is renamed after its
// directory; one scenario saves to the directory itself.
func TestRunDirs(t *testing.T) {
	t.Parallel()
	list := []*scenarios.Scenario{{Name: "pay"}, {Name: "pay"}, {Name: "../x"}}
	got := RunDirs("out", list)
	if want := []string{filepath.Join("out", "pay"), filepath.Join("out", "pay-2"), filepath.Join("out", "x")}; !slices.Equal(got, want) {
		t.Errorf("RunDirs = %q, want %q", got, want)
	}
	if list[0].Name != "pay" || list[1].Name != "pay-2" || list[2].Name != "../x" {
		t.Errorf("RunDirs named the scenarios %q, %q, %q; want pay, pay-2, ../x", list[0].Name, list[1].Name, list[2].Name)
	}
	if got := RunDirs("out", list[:1]); !slices.Equal(got, []string{"out"}) {
		t.Errorf("RunDirs(one) = %q, want [out]", got)
	}
}

func TestCheckWritable(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := CheckWritable(dir); err != nil {
		t.Fatalf("CheckWritable(new dir) = %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("CheckWritable left %d files behind", len(left))
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if err := CheckWritable(filepath.Join(file, "x")); err == nil || !strings.HasPrefix(err.Error(), filepath.Join(file, "x")+": ") {
		t.Errorf("CheckWritable(under a file) = %v, want an error naming the directory first", err)
	}
}

// Save writes the run's history and its report as JSON and HTML.
