package cmd

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The flag layer: what `idemcheck run ...` puts into RunOptions.
func TestRunFlags(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want RunOptions
	}{
		{[]string{"a.yaml"}, nil, RunOptions{Scenarios: []string{"a.yaml"}, Format: "text", SpillAfter: defaultSpillAfter}},
		{[]string{"a.yaml", "b", "--target", "http://x", "--seed", "7", "--key-nonce", "0", "--ops", "10", "--concurrency", "4", "-o", "out", "-f", "json"}, nil,
			RunOptions{Scenarios: []string{"a.yaml", "b"}, Target: "http://x", Seed: 7, SeedSet: true, NonceSet: true, Ops: 10, Concurrency: 4, Out: "out", Format: "json", SpillAfter: defaultSpillAfter}},
		{[]string{"a.yaml", "--rate", "250", "--duration", "30s"}, map[string]string{"IDEMCHECK_TARGET": "http://env"},
			RunOptions{Scenarios: []string{"a.yaml"}, Target: "http://env", Rate: 250, Duration: 30 * time.Second, Format: "text", SpillAfter: defaultSpillAfter}},
		{[]string{"a.yaml", "-t", "http://flag"}, map[string]string{"IDEMCHECK_TARGET": "http://env"},
			RunOptions{Scenarios: []string{"a.yaml"}, Target: "http://flag", Format: "text", SpillAfter: defaultSpillAfter}},
		{[]string{"a.yaml", "--rate", "12000/m", "-t", "http://a", "-t", "http://b", "-q"}, nil,
			RunOptions{Scenarios: []string{"a.yaml"}, Target: "http://a", Targets: []string{"http://a", "http://b"}, Rate: 200, Quiet: true, Format: "text", SpillAfter: defaultSpillAfter}},
	}
	for _, c := range cases {
		var got *RunOptions
		f := &Factory{Streams: Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, Getenv: func(k string) string { return c.env[k] }}
		cmd := NewCmdRun(f, func(_ context.Context, o *RunOptions) error { got = o; return nil })
		cmd.SetArgs(c.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("run %v: %v", c.args, err)
		}
		if diff := cmp.Diff(c.want, *got, cmpopts.IgnoreUnexported(RunOptions{}), cmpopts.IgnoreFields(RunOptions{}, "Streams", "Getenv", "Transport", "Reports", "Phases", "Metrics")); diff != "" {
			t.Errorf("run %v options (-want +got):\n%s", c.args, diff)
		}
	}
	var got *RunOptions
	f := &Factory{Streams: Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, Getenv: func(string) string { return "" }}
	cmd := NewCmdRun(f, func(_ context.Context, o *RunOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"a.yaml", "--phase", "prepare", "--shards", "3", "--start-in", "1m", "-o", "d"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := (phaseFlags{Phase: "prepare", Shards: 3, StartIn: time.Minute, Wait: defaultShardWait}); got.Phases != want {
		t.Errorf("phase flags = %+v, want %+v", got.Phases, want)
	}
	cmd = NewCmdRun(f, func(_ context.Context, o *RunOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"a.yaml", "--metrics-addr", "127.0.0.1:0", "--metrics-push", "http://gw:9091", "--metrics-every", "2s", "--metrics-label", "instance=ci"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	m := got.Metrics
	if m.Addr != "127.0.0.1:0" || m.Push != "http://gw:9091" || m.Every != 2*time.Second || len(m.Labels) != 1 || m.Labels[0] != "instance=ci" ||
		m.run == nil || m.run.Pusher == nil || m.run.Every != 2*time.Second {
		t.Errorf("metrics flags = %+v, want them all set, with a pusher", m)
	}
}

func TestDemoAndLabFlags(t *testing.T) {
	f := &Factory{Streams: Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, Getenv: func(string) string { return "" }}
	var d *DemoOptions
	demo := NewCmdDemo(f, func(_ context.Context, o *DemoOptions) error { d = o; return nil })
	demo.SetArgs([]string{"--ops", "50", "--seed", "3", "--bug", "no-key", "--bug", "key-only", "--store", "redis://h:1/0", "--processor-latency", "5ms"})
	if err := demo.Execute(); err != nil {
		t.Fatal(err)
	}
	if d.Ops != 50 || d.Seed != 3 || d.Out != "idemcheck-report" || !cmp.Equal(d.Lab.Bugs, []string{"no-key", "key-only"}) ||
		d.Lab.Store != "redis://h:1/0" || d.Lab.Ledger != "memory" || d.Lab.ProcessorLatency != 5*time.Millisecond || d.Lab.KeyTTL != 24*time.Hour {
		t.Errorf("demo options = %+v", d)
	}
	var l *LabOptions
	lab := NewCmdLab(f, func(_ context.Context, o *LabOptions) error { l = o; return nil })
	lab.SetArgs([]string{"--listen", "127.0.0.1:9999", "--allow-reset", "--namespace", "ci_1"})
	if err := lab.Execute(); err != nil {
		t.Fatal(err)
	}
	if l.Addr != "127.0.0.1:9999" || !l.AllowReset || l.Namespace != "ci_1" || l.ProcessorLatency != 20*time.Millisecond {
		t.Errorf("lab options = %+v", l)
	}
}
