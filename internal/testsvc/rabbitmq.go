//go:build linux

package testsvc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RabbitMQBroker is a running throwaway RabbitMQ.
type RabbitMQBroker struct {
	// URL is its AMQP URL, amqp://guest:guest@127.0.0.1:PORT/.
	URL string
	// Management is its management API's base URL, http://127.0.0.1:PORT
	// (user guest, password guest).
	Management string
}

// rabbitReady is how long a RabbitMQ may take to start: an Erlang node
// boots its plugins for several seconds, tens on a loaded machine.
const rabbitReady = 120 * time.Second

// sharedRabbit is the broker a package's tests share under Main.
var sharedRabbit struct {
	sync.Mutex
	started bool
	b       *RabbitMQBroker
	stop    func()
	err     error
	vhosts  int // made so far
}

// RabbitMQ starts a throwaway RabbitMQ with its management plugin on
// free 127.0.0.1 ports (AMQP, management, distribution and its own epmd),
// its files in a temp dir, and returns it; under Main the package's tests
// share one broker (it starts in seconds, not milliseconds), stopped when
// they end, each given a virtual host of its own (in URL's path).
//
// It runs /usr/lib/rabbitmq/bin/rabbitmq-server (the /usr/sbin wrapper
// insists on the rabbitmq user and its directories). Without it the test
// is skipped (or fails when IDEMCHECK_REQUIRE_SERVICES=1).
func RabbitMQ(t testing.TB) RabbitMQBroker {
	t.Helper()
	bins := need(t, RabbitMQServer)
	if !sharing.Load() {
		b, stop, err := startRabbitMQ(bins)
		if err != nil {
			t.Fatalf("testsvc: %v", err)
		}
		t.Cleanup(stop)
		return *b
	}
	sharedRabbit.Lock()
	defer sharedRabbit.Unlock()
	if !sharedRabbit.started {
		sharedRabbit.started = true
		begin := time.Now()
		sharedRabbit.b, sharedRabbit.stop, sharedRabbit.err = startRabbitMQ(bins)
		if sharedRabbit.err == nil {
			t.Logf("testsvc: rabbitmq ready at %s in %v", sharedRabbit.b.URL, time.Since(begin).Round(time.Millisecond))
		}
	}
	if sharedRabbit.err != nil {
		t.Fatalf("testsvc: %v", sharedRabbit.err)
	}
	b := *sharedRabbit.b
	sharedRabbit.vhosts++
	vhost := fmt.Sprintf("testsvc_%d", sharedRabbit.vhosts)
	if err := addVhost(b, vhost); err != nil {
		t.Fatalf("testsvc: rabbitmq: virtual host %s: %v", vhost, err)
	}
	b.URL += vhost
	return b
}

// addVhost creates virtual host name on b, open to guest: each test on a
// shared broker has queues of its own.
func addVhost(b RabbitMQBroker, name string) error {
	for _, put := range []struct{ path, body string }{
		{"/api/vhosts/" + name, ""},
		{"/api/permissions/" + name + "/guest", `{"configure":".*","write":".*","read":".*"}`},
	} {
		req, err := http.NewRequest(http.MethodPut, b.Management+put.path, strings.NewReader(put.body))
		if err != nil {
			return err
		}
		req.SetBasicAuth("guest", "guest")
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("PUT %s answered %d", put.path, resp.StatusCode)
		}
	}
	return nil
}

// stopSharedRabbit stops the package's shared broker, if it started.
func stopSharedRabbit() {
	sharedRabbit.Lock()
	defer sharedRabbit.Unlock()
	if sharedRabbit.stop != nil {
		sharedRabbit.stop()
	}
}

// startRabbitMQ starts a broker from bins (rabbitmq-server, epmd).
func startRabbitMQ(bins []string) (*RabbitMQBroker, func(), error) {
	server, epmdBin := bins[0], bins[1]
	dir, err := os.MkdirTemp("", "testsvc-rabbitmq-")
	if err != nil {
		return nil, nil, fmt.Errorf("rabbitmq: %w", err)
	}
	var lastErr error
	for try := 0; try < startTries; try++ {
		ports := make([]int, 4) // AMQP, management, distribution, epmd
		for i := range ports {
			if ports[i], err = freePort(); err != nil {
				_ = os.RemoveAll(dir)
				return nil, nil, fmt.Errorf("rabbitmq: %w", err)
			}
		}
		b, stop, err := startRabbitOn(server, epmdBin, filepath.Join(dir, strconv.Itoa(try)), ports)
		if err == nil {
			return b, func() { stop(); _ = os.RemoveAll(dir) }, nil
		}
		lastErr = err
	}
	_ = os.RemoveAll(dir)
	return nil, nil, fmt.Errorf("rabbitmq did not start: %w", lastErr)
}

// startRabbitOn starts epmd and a broker on ports, its files under dir.
func startRabbitOn(server, epmdBin, dir string, ports []int) (*RabbitMQBroker, func(), error) {
	amqpPort, apiPort, distPort, epmdPort := ports[0], ports[1], ports[2], ports[3]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	conf := fmt.Sprintf(`listeners.tcp.default = 127.0.0.1:%d
management.tcp.port = %d
management.tcp.ip = 127.0.0.1
collect_statistics_interval = 200
loopback_users = none
log.console = false
log.file.level = warning
`, amqpPort, apiPort)
	if err := os.WriteFile(filepath.Join(dir, "rabbitmq.conf"), []byte(conf), 0o644); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "enabled_plugins"), []byte("[rabbitmq_management].\n"), 0o644); err != nil {
		return nil, nil, err
	}
	// epmd of its own, a child of this process, so that none outlives it
	epmd, err := start(exec.Command(epmdBin, "-port", strconv.Itoa(epmdPort), "-address", "127.0.0.1"), filepath.Join(dir, "epmd.log"), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("rabbitmq: epmd: %w", err)
	}
	// erl starts a detached epmd of its own when none answers: wait for ours
	if err := waitListening(epmdPort, 10*time.Second); err != nil {
		epmd.stop(syscall.SIGKILL)
		return nil, nil, fmt.Errorf("rabbitmq: epmd: %w\n%s", err, tail(filepath.Join(dir, "epmd.log")))
	}
	cmd := exec.Command(server)
	cmd.Dir = dir
	cmd.Env = []string{
		"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
		"RABBITMQ_CONFIG_FILE=" + filepath.Join(dir, "rabbitmq.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(dir, "log"),
		"RABBITMQ_PLUGINS_EXPAND_DIR=" + filepath.Join(dir, "plugins-expand"),
		fmt.Sprintf("RABBITMQ_NODENAME=rabbit-%d@localhost", amqpPort),
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(distPort),
		"ERL_EPMD_PORT=" + strconv.Itoa(epmdPort),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		// the script then execs the Erlang VM, which so gets the
		// parent-death signal, rather than wait on it in a shell
		"RUNNING_UNDER_SYSTEMD=true",
	}
	logPath := filepath.Join(dir, "rabbitmq-server.log")
	p, err := start(cmd, logPath, nil)
	if err != nil {
		epmd.stop(syscall.SIGKILL)
		return nil, nil, fmt.Errorf("rabbitmq: %w", err)
	}
	b := &RabbitMQBroker{URL: fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", amqpPort), Management: fmt.Sprintf("http://127.0.0.1:%d", apiPort)}
	stop := func() {
		p.stop(syscall.SIGTERM)
		epmd.stop(syscall.SIGTERM)
	}
	deadline := time.Now().Add(rabbitReady)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = rabbitPing(ctx, b, amqpPort)
		cancel()
		if err == nil {
			return b, stop, nil
		}
		select {
		case <-p.done:
			epmd.stop(syscall.SIGKILL)
			return nil, nil, fmt.Errorf("rabbitmq-server exited before it was ready: %v\n%s", p.err, tail(logPath))
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("rabbitmq-server not ready after %v: %w\n%s", rabbitReady, err, tail(logPath))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// rabbitPing succeeds once the management API answers (the last plugin
// to start) and the AMQP port takes connections.
func rabbitPing(ctx context.Context, b *RabbitMQBroker, amqpPort int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.Management+"/api/overview", nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth("guest", "guest")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("management API answered %d", resp.StatusCode)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(amqpPort)))
	if err != nil {
		return err
	}
	return c.Close()
}

// waitListening waits up to limit for 127.0.0.1:port to take connections.
func waitListening(port int, limit time.Duration) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %v: %w", addr, limit, err)
		}
		time.Sleep(pollEvery)
	}
}
