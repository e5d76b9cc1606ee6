package history

import "time"

// NemesisWindow is one run of a nemesis: its stop command, its start
// command, then the wait until the target answered ready. Times are
// offsets from the start of the load, as an attempt's are, so the
// attempts in flight across it can be told.
type NemesisWindow struct {
	// Fault is the nemesis's index in the scenario's faults; N numbers
	// its windows from 1.
	Fault int `json:"fault"`
	N     int `json:"n"`
	// Start is when the stop command was run; Ready when the target
	// answered its readiness request (or the start command ended, when
	// the nemesis names no readiness request, or the wait gave up).
	Start time.Duration `json:"start_ns"`
	Ready time.Duration `json:"ready_ns"`
	// Stop and Restart are the commands run; Restart is nil when the
	// nemesis has no start command (the platform restarts the target).
	Stop    *NemesisCommand `json:"stop,omitempty"`
	Restart *NemesisCommand `json:"restart,omitempty"`
	// Err says why the window did not go as declared (a command that
	// failed, a target not ready in time, a window that never opened);
	// "" when it did. A run with such a window cannot pass on it.
	Err string `json:"error,omitempty"`
}

// NemesisCommand is one command a nemesis ran, secrets scrubbed.
type NemesisCommand struct {
	// Command is the command line as the scenario wrote it, its
	// arguments quoted where needed and secrets masked.
	Command string        `json:"command"`
	Start   time.Duration `json:"start_ns"`
	End     time.Duration `json:"end_ns"`
	// Exit is the command's exit status; -1 when it did not exit of its
	// own accord (not found, killed at its timeout or by an interrupt).
	Exit int `json:"exit"`
	// Output is the start of what it wrote (stdout and stderr),
	// bounded and scrubbed.
	Output string `json:"output,omitempty"`
	// Err says why it failed; "" when it exited 0.
	Err string `json:"error,omitempty"`
}
