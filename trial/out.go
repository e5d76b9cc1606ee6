package trial

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/scenarios"
)

// CheckWritable makes dir and checks that a file can be written in it, so
// that a directory a run cannot save to is found before any request is
// sent. Its error names dir first.
func CheckWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".idemcheck-write-check-*")
	if err != nil {
		return fmt.Errorf("%s: cannot write there: %w", dir, unwrapPath(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// unwrapPath is a path error's cause, as the path is named already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// RunDirs are the directories the runs of list save to under out: out
// itself for one scenario; for several, a directory of its own each,
// named after it, safe as a path and unique (DirNames). Two scenarios of
// one name are two runs: the later ones are renamed after their
// directory (pay-2), and their keys derive from that name, so they do not
// resend the first's keys.
func RunDirs(out string, list []*scenarios.Scenario) []string {
	names := make([]string, len(list))
	for i, sc := range list {
		names[i] = sc.Name
	}
	dirs := DirNames(names)
	seen := map[string]bool{}
	for i, sc := range list {
		if seen[sc.Name] {
			sc.Name = dirs[i]
		}
		seen[sc.Name] = true
	}
	outs := make([]string, len(list))
	for i := range list {
		outs[i] = out
		if len(list) > 1 {
			outs[i] = filepath.Join(out, dirs[i])
		}
	}
	return outs
}

// DirNames returns a directory name for each scenario name, safe as one
// path element (letters, digits, ".", "_" and "-"; no "..") and unique
// among them: "../x" becomes "x", two "pay" become "pay" and "pay-2".
func DirNames(names []string) []string {
	out := make([]string, len(names))
	used := map[string]bool{}
	for i, n := range names {
		base := safeName(n)
		name := base
		for k := 2; used[strings.ToLower(name)]; k++ {
			name = fmt.Sprintf("%s-%d", base, k)
		}
		used[strings.ToLower(name)] = true // case-insensitive file systems
		out[i] = name
	}
	return out
}

// safeName is n as one path element: every run of characters other than
// letters, digits, ".", "_" and "-" becomes "-", leading dots and dashes
// and trailing dots go; "scenario" when nothing is left.
func safeName(n string) string {
	var b strings.Builder
	dash := false
	for _, r := range n {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			if !dash {
				b.WriteByte('-')
				dash = true
			}
			continue
		}
		b.WriteRune(r)
		dash = r == '-'
	}
	s := strings.TrimLeft(b.String(), ".-")
	s = strings.TrimRight(s, ".-")
	if len(s) > 100 {
		s = s[:100]
	}
	if s == "" {
		return "scenario"
	}
	return s
}

// ErrSymlinkDir is wrapped by NoSymlinkBelow's error: a directory below a
// run's --out is a symbolic link, which would send the run's files
// elsewhere (one planted on a shared volume, say).
var ErrSymlinkDir = errors.New("a symbolic link below --out")

// NoSymlinkBelow checks that no path element of dir below out (the --out
// the user gave, itself whatever it is) is a symbolic link. A run's files
// go to directories it names below out (RunDirs); a link planted there
// would redirect them, so it is refused, before the run and again before
// its files are written.
func NoSymlinkBelow(out, dir string) error {
	rel, err := filepath.Rel(out, dir)
	if err != nil || rel == "." {
		return nil
	}
	p := out
	for _, elem := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, elem)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil // not made yet: nothing to follow
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s: %w: refusing to write a run through it", p, ErrSymlinkDir)
		}
	}
	return nil
}

// CheckFileWritable checks, before anything is sent, that a report can be
// written at path: a file can be made in its directory, and an existing
// regular file can be opened for writing.
func CheckFileWritable(path string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".idemcheck-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, pathCause(err))
	}
	f.Close()
	os.Remove(f.Name())
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("cannot write %s: %w", path, pathCause(err))
		}
		f.Close()
	}
	return nil
}

// pathCause is a path error's cause, as the message names the path.
func pathCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// runFiles are the names of the files a run writes in its --out: a run's
// (reports.SaveRun) and a sharded run's.
var runFiles = []string{HistoryFile, "report.json", "report.html", ManifestFile, BeforeFile, MACFile}

// RunFileIn is the name of the file path would be among those a run
// writes in out (or a directory below it): its history, reports, a
// sharded run's files, a spill; "" when it is none of them.
func RunFileIn(out, path string) string {
	base, err := filepath.Abs(out)
	if err != nil {
		return ""
	}
	p, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	name := filepath.Base(p)
	shard, _ := filepath.Match("shard-*-of-*.*", name)
	if slices.Contains(runFiles, name) || shard || strings.HasPrefix(name, "idemcheck-spill-") {
		return name
	}
	return ""
}
