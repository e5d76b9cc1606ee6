package abtest

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteHGRMFiles writes each arm's HdrHistogram percentile file to dir,
// which it makes: a.hgrm and b.hgrm, for the standard plotter.
func (r *Result) WriteHGRMFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, arm := range r.Arms() {
		path := filepath.Join(dir, arm.Name+".hgrm")
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		err = arm.WriteHGRM(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}
