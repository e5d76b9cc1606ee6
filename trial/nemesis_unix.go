//go:build unix

package trial

import (
	"os/exec"
	"syscall"
)

// ownGroup runs cmd in a process group of its own, and makes its
// cancellation kill the whole group: a shell's children with it, and
// nothing a terminal's Ctrl-C sends to idemcheck's group.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
