package code

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Limits bound one run of a snippet.
type Limits struct {
	CPU       time.Duration // CPU time (RLIMIT_CPU, whole seconds, at least 1)
	Wall      time.Duration // wall time; the whole sandbox is killed then
	MemoryMB  int           // memory of the whole call, its tmpfs files included (a memory cgroup), and address space per process (RLIMIT_AS); memfd_create and SysV shared memory are refused
	Processes int           // processes and threads in the sandbox (RLIMIT_NPROC)
	DiskMB    int           // all the sandbox can write (its one tmpfs, /tmp and /dev/shm), and the largest file (RLIMIT_FSIZE)
	MaxOutput int           // bytes of stdout and of stderr kept each
}

// Sandbox runs Python snippets under bubblewrap: new user, PID, network,
// IPC and UTS namespaces (so no network but a private loopback), /usr
// read-only, and the Limits applied with prlimit inside. The host's
// files other than /usr are not visible. A seccomp filter refuses
// memfd_create and SysV shared memory, and the file limit is low, so
// that no anonymous shared memory escapes the limits (seccomp.go). The
// root and /dev are
// read-only; the one writable place is a tmpfs of Limits.DiskMB at
// /dev/shm, which /tmp links to, so that every byte written counts
// against that size (bwrap's root and /dev are tmpfs without a size).
// It vanishes with the run. Each run has a memory cgroup of its own
// (cgroup.go), joined before bwrap starts, so Limits.MemoryMB holds for
// all its processes together. When the trainer runs as root, the sandbox
// runs as nobody (uid 65534, through util-linux setpriv once the cgroup
// is joined): the kernel does not enforce RLIMIT_NPROC on root, so as
// root a fork bomb would not be bounded.
type Sandbox struct {
	Bwrap   string // bubblewrap binary
	Python  string // interpreter, under /usr (the only host tree the sandbox sees)
	Prlimit string // util-linux prlimit, under /usr
	Limits  Limits
	// memory is where each run's memory cgroup is made (New finds it);
	// a Sandbox without it does not run.
	memory *memoryCgroups
	// setpriv is util-linux setpriv, which drops root to nobody ("" when
	// the trainer is not root).
	setpriv string
}

// Output is what a run produced.
type Output struct {
	Stdout, Stderr string // as written, each cut to Limits.MaxOutput bytes
	Dropped        int    // bytes of output cut
	ExitCode       int    // -1 when killed by a signal
	Signal         string // the signal that killed the snippet, if any (bwrap reports it as status 128+n)
	WallTimeout    bool   // the run was killed at Limits.Wall
	MemoryLimit    bool   // the kernel killed a process of the run for going over Limits.MemoryMB
}

// nobody is the uid and gid the sandbox runs as when the trainer is root.
const nobody = 65534

// joinCgroup is the shell program that starts a run: it moves itself into
// the run's memory cgroup (its cgroup.procs is $0) and then becomes the
// rest of its arguments, so that every process of the run is limited from
// its start. It exits with status joinFailed, saying so, when it cannot.
const joinCgroup = `{ echo $$ > "$0"; } 2>/dev/null || { echo "sandbox: cannot join the memory cgroup ($0)" >&2; exit 125; }; exec "$@"`

// joinFailed is joinCgroup's exit status when it could not join.
const joinFailed = 125

// seccompFD is the descriptor bwrap reads the seccomp filter from (the
// first of exec.Cmd's ExtraFiles).
const seccompFD = 3

// maxFiles is the sandbox's RLIMIT_NOFILE: a snippet needs a handful, and
// each open pipe can hold up to 1 MB of kernel memory outside every other
// limit.
const maxFiles = 64

// args is bwrap's command line for one run.
func (s *Sandbox) args() []string {
	l := s.Limits
	cpu := max(1, int((l.CPU+time.Second-1)/time.Second))
	return []string{
		"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
		"--seccomp", strconv.Itoa(seccompFD),
		"--hostname", "sandbox",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.Itoa(l.DiskMB << 20), "--tmpfs", "/dev/shm",
		"--remount-ro", "/dev", // not recursive: /dev/shm stays writable
		"--symlink", "dev/shm", "/tmp",
		"--chdir", "/tmp",
		"--remount-ro", "/",
		"--", s.Prlimit,
		fmt.Sprintf("--cpu=%d:%d", cpu, cpu+1), // SIGXCPU at the soft limit, SIGKILL a second later
		"--as=" + strconv.Itoa(l.MemoryMB<<20),
		"--nproc=" + strconv.Itoa(l.Processes),
		"--fsize=" + strconv.Itoa(l.DiskMB<<20),
		"--core=0",
		"--nofile=" + strconv.Itoa(maxFiles),
		"--", s.Python, "-I", "-",
	}
}

// Run runs code (read by the interpreter from stdin) and returns its
// output. It returns an error only when the sandbox itself could not run
// (bwrap missing, namespaces refused) or ctx ended; a snippet that fails,
// crashes or is killed at a limit is an Output.
func (s *Sandbox) Run(ctx context.Context, code string) (Output, error) {
	if s.memory == nil {
		return Output{}, errors.New("sandbox: no memory cgroup to run in: make the tool with code.New")
	}
	group, err := s.memory.make(s.Limits.MemoryMB)
	if err != nil {
		return Output{}, fmt.Errorf("sandbox: %w", err)
	}
	defer group.remove()
	ctx, cancel := context.WithTimeout(ctx, s.Limits.Wall)
	defer cancel()
	argv := []string{"-c", joinCgroup, group.procs()}
	if s.setpriv != "" {
		argv = append(argv, s.setpriv, fmt.Sprintf("--reuid=%d", nobody), fmt.Sprintf("--regid=%d", nobody), "--clear-groups", "--")
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", append(append(argv, s.Bwrap), s.args()...)...)
	cmd.Stdin = strings.NewReader(code)
	filter, err := seccompFilter()
	if err != nil {
		return Output{}, fmt.Errorf("sandbox: %w", err)
	}
	fr, fw, err := os.Pipe()
	if err != nil {
		return Output{}, fmt.Errorf("sandbox: %w", err)
	}
	defer fr.Close()
	_, err = fw.Write(filter) // a few hundred bytes: within the pipe's buffer
	fw.Close()
	if err != nil {
		return Output{}, fmt.Errorf("sandbox: seccomp filter: %w", err)
	}
	cmd.ExtraFiles = []*os.File{fr}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Killing bwrap's process group kills the sandbox: its processes die
	// with their parent (--die-with-parent) and with their PID namespace.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	stdout, stderr := &capped{max: s.Limits.MaxOutput}, &capped{max: s.Limits.MaxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	out := Output{Stdout: stdout.buf.String(), Stderr: stderr.buf.String(), Dropped: stdout.dropped + stderr.dropped,
		MemoryLimit: group.oomKills() > 0}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil && cmd.ProcessState != nil:
		if parent := context.Cause(ctx); errors.Is(parent, context.Canceled) {
			return out, parent
		}
		out.ExitCode, out.WallTimeout = -1, true
		return out, nil
	case errors.As(err, &exit):
		out.ExitCode = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			out.ExitCode, out.Signal = -1, ws.Signal().String()
		}
		// bwrap's init exits with 128+n when the snippet died of signal n.
		if out.ExitCode > 128 && out.ExitCode < 128+65 {
			out.ExitCode, out.Signal = -1, syscall.Signal(out.ExitCode-128).String()
		}
		if out.ExitCode != 0 && (strings.HasPrefix(out.Stderr, "bwrap: ") || strings.HasPrefix(out.Stderr, "setpriv: ")) {
			return out, fmt.Errorf("sandbox: %s", strings.TrimSpace(out.Stderr))
		}
		if out.ExitCode == joinFailed && strings.HasPrefix(out.Stderr, "sandbox: cannot join") {
			return out, errors.New(strings.TrimSpace(out.Stderr))
		}
		return out, nil
	case err != nil:
		return out, fmt.Errorf("sandbox: %w", err)
	}
	return out, nil
}

// capped keeps the first max bytes written to it and counts the rest, so
// a snippet printing without end neither blocks nor fills memory.
type capped struct {
	max     int
	buf     bytes.Buffer
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	keep := min(len(p), max(0, c.max-c.buf.Len()))
	c.buf.Write(p[:keep])
	c.dropped += len(p) - keep
	return len(p), nil
}
