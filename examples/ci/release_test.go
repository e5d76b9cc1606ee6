package ci_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// goreleaser is the part of .goreleaser.yaml the tests read.
type goreleaser struct {
	Version int `yaml:"version"`
	Builds  []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Env     []string `yaml:"env"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
	} `yaml:"builds"`
	Checksum struct {
		Name string `yaml:"name_template"`
	} `yaml:"checksum"`
	Dockers []struct {
		Dockerfile string   `yaml:"dockerfile"`
		Goos       string   `yaml:"goos"`
		Goarch     string   `yaml:"goarch"`
		Flags      []string `yaml:"build_flag_templates"`
	} `yaml:"dockers"`
}

func readRelease(t *testing.T) goreleaser {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var g goreleaser
	if err := yaml.Unmarshal(b, &g); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	return g
}

// TestReleaseConfig: static binaries for linux, darwin and windows on
// amd64 and arm64, stamped with their version, with checksums, and the
// image built on the release Dockerfile with the OCI labels.
func TestReleaseConfig(t *testing.T) {
	g := readRelease(t)
	if g.Version != 2 || len(g.Builds) != 1 {
		t.Fatalf(".goreleaser.yaml: version %d, %d builds; want version 2 and one build", g.Version, len(g.Builds))
	}
	b := g.Builds[0]
	if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") || len(b.Ldflags) == 0 ||
		!strings.Contains(b.Ldflags[0], "-X "+modulePath(t)+"/cmd.Version={{ .Version }}") {
		t.Errorf("build %+v: want a static, trimmed build stamped with cmd.Version", b)
	}
	for _, want := range []string{"linux", "darwin", "windows"} {
		if !slices.Contains(b.Goos, want) {
			t.Errorf("goos %v lacks %s", b.Goos, want)
		}
	}
	for _, want := range []string{"amd64", "arm64"} {
		if !slices.Contains(b.Goarch, want) {
			t.Errorf("goarch %v lacks %s", b.Goarch, want)
		}
	}
	if g.Checksum.Name == "" {
		t.Error("no checksum file")
	}
	if len(g.Dockers) == 0 {
		t.Fatal("no container image")
	}
	for _, d := range g.Dockers {
		if _, err := os.Stat(filepath.Join("..", "..", d.Dockerfile)); err != nil {
			t.Errorf("docker image's %s: %v", d.Dockerfile, err)
		}
		labels := strings.Join(d.Flags, " ")
		for _, l := range []string{"org.opencontainers.image.version", "org.opencontainers.image.revision", "org.opencontainers.image.source"} {
			if !strings.Contains(labels, l) {
				t.Errorf("image %s/%s lacks the label %s", d.Goos, d.Goarch, l)
			}
		}
	}
}

// release turns on TestReleaseTargetsBuild: a cross build of every
// target recompiles the module and its dependencies for each, minutes of
// CPU, so .ci/run runs it once on its own rather than in every suite.
var release = flag.Bool("release", false, "cross-compile every release target (TestReleaseTargetsBuild)")

// TestReleaseTargetsBuild cross-compiles every target .goreleaser.yaml
// names with go build, as the release would (GoReleaser itself runs where
// releases are cut): a target that no longer builds fails here first.
// .ci/run runs it: go test ./examples/ci -run TestReleaseTargetsBuild -release
//
// On a fresh machine each target compiles the standard library and every
// dependency anew: about two minutes of two cores each, over ten for all
// six. So the proof builds without the optimiser and inliner
// (-gcflags=all=-N -l), which type-checks, compiles and links the same
// code, with the same build tags, for each target in a third less time,
// and builds two targets at once (one go build keeps two cores busy only
// two thirds of the time). The release's own builds optimise.
func TestReleaseTargetsBuild(t *testing.T) {
	if !*release {
		t.Skip("cross builds: run with -release (as .ci/run does)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go on PATH: %v", err)
	}
	b := readRelease(t).Builds[0]
	type target struct{ goos, goarch string }
	var targets []target
	for _, goos := range b.Goos {
		for _, goarch := range b.Goarch {
			targets = append(targets, target{goos, goarch})
		}
	}
	results := make([]string, len(targets))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			defer cancel()
			c := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-gcflags=all=-N -l", "-o", os.DevNull, ".")
			c.Dir = filepath.Join("..", "..")
			c.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+tg.goos, "GOARCH="+tg.goarch)
			out, err := c.CombinedOutput()
			if err != nil {
				results[i] = fmt.Sprintf("%s/%s does not build: %v\n%s", tg.goos, tg.goarch, err, out)
			}
		})
	}
	wg.Wait()
	for i, tg := range targets {
		if results[i] != "" {
			t.Error(results[i])
			continue
		}
		t.Logf("%s/%s builds", tg.goos, tg.goarch)
	}
}
