package redact

import (
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// A run's Secrets are its one registry: every command makes one, every
// package that sends (runner, oracles, audit, bench) registers in it what
// it sends, and every output scrubs with it: values before they are
// encoded (history, reports, manifest), and raw streams byte by byte
// (Writer: stderr, --http-debug, --dry-run).

// MinEnvSecret is the shortest value of an environment variable whose name
// does not look secret that Env registers: a template may read a short
// word (a region, a currency) that a mask would only blur. Shorter values
// are listed by Unmasked.
const MinEnvSecret = 8

// Env wraps getenv for templates: every value read becomes a secret of
// the run (a value given through {{env}} is one the scenario keeps out of
// its file), those of secret-looking names (API_TOKEN, DB_PASSWORD)
// whatever their length, the others from MinEnvSecret bytes up; the
// password, user:password and query values of a URL read are secrets too.
// Nil reads nothing.
func (s *Secrets) Env(getenv func(string) string) func(string) string {
	if getenv == nil {
		return nil
	}
	return func(name string) string {
		v := getenv(name)
		if strings.TrimSpace(v) == "" {
			return v
		}
		if strings.Contains(v, "://") {
			if u, err := url.Parse(strings.TrimSpace(v)); err == nil {
				s.AddURL(u)
			}
		}
		if SecretHeader(name) || len(strings.TrimSpace(v)) >= MinEnvSecret {
			s.Add(v)
		} else {
			s.mu.Lock()
			if !slices.Contains(s.short, name) {
				s.short = append(s.short, name)
			}
			s.mu.Unlock()
		}
		return v
	}
}

// Unmasked names the environment variables Env read whose values are too
// short to be masked, in the order they were first read.
func (s *Secrets) Unmasked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.short)
}

// Writer returns a writer that writes to w what it is given with the
// secrets of s masked, for raw streams (stderr, traces). Each Write is
// scrubbed whole: a secret split across two writes is not seen, so
// callers write a line or a block at once.
func (s *Secrets) Writer(w io.Writer) io.Writer {
	if s == nil {
		return w
	}
	return &scrubWriter{s: s, w: w}
}

// scrubWriter serialises its writes: a command's stderr is written by its
// progress, a run's checkpoint and its messages from several goroutines,
// and a writer that is not safe for concurrent use (a buffer in a test,
// a pipe wrapper) must see one line at a time.
type scrubWriter struct {
	s  *Secrets
	mu sync.Mutex
	w  io.Writer
}

func (sw *scrubWriter) Write(p []byte) (int, error) {
	out := sw.s.Scrub(string(p))
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if _, err := io.WriteString(sw.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}
