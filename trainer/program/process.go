package program

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentrl/agentrl/trajectory"
)

// exit is how one run of the program ended.
type exit struct {
	stdout []byte
	stop   trajectory.StopReason // "" when it exited 0 within its limits
	err    string                // what went wrong, with the stderr tail
}

// run starts the program with env added to its environment and stdin as
// its input, in its own process group, and waits for it: past timeout, on
// more than maxStdout bytes of stdout, or when ctx ends, the whole group
// is killed. The group is killed when the program exits too, so nothing it
// started outlives its episode; and should the trainer die, the kernel
// kills the program (Pdeathsig).
func run(ctx context.Context, argv []string, dir string, env []string, stdin []byte, timeout time.Duration, maxStdout, stderrTail int) exit {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	out := &capped{max: maxStdout, flood: make(chan struct{})}
	errTail := &tail{n: stderrTail}
	// Pipes of our own, read on our goroutines, so that waiting for the
	// program does not wait for whatever it left holding them.
	var readers []*os.File
	for _, dst := range []*io.Writer{&cmd.Stdout, &cmd.Stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			return exit{stop: trajectory.StopProgramExit, err: err.Error()}
		}
		defer w.Close()
		*dst = w
		readers = append(readers, r)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		for _, r := range readers {
			r.Close()
		}
		return exit{stop: trajectory.StopProgramExit, err: fmt.Sprintf("start %s: %v", argv[0], err)}
	}
	cmd.Stdout.(*os.File).Close()
	cmd.Stderr.(*os.File).Close()
	copied := make(chan struct{}, 2)
	for i, w := range []io.Writer{out, errTail} {
		go func(r *os.File, w io.Writer) {
			io.Copy(w, r)
			copied <- struct{}{}
		}(readers[i], w)
	}
	killGroup := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var e exit
	select {
	case err := <-done:
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			e.stop, e.err = trajectory.StopProgramExit, ee.String()
		case err != nil:
			e.stop, e.err = trajectory.StopProgramExit, err.Error()
		}
	case <-timer.C:
		killGroup()
		<-done
		e.stop, e.err = trajectory.StopProgramTimeout, fmt.Sprintf("still running after agent.timeout %s: killed", timeout)
	case <-out.flood:
		killGroup()
		<-done
		e.stop, e.err = trajectory.StopOutputFlood, fmt.Sprintf("printed more than agent.max_stdout %d bytes: killed", maxStdout)
	case <-ctx.Done():
		killGroup()
		<-done
		e.stop, e.err = trajectory.StopCancelled, ctx.Err().Error()
	}
	// Whatever the program left running in its group ends with it; then the
	// pipes reach their end (or, held by something that left the group,
	// are closed after a grace period).
	killGroup()
	grace := time.After(2 * time.Second)
	for range readers {
		select {
		case <-copied:
		case <-grace:
			for _, r := range readers {
				r.Close()
			}
			<-copied
		}
	}
	for _, r := range readers {
		r.Close()
	}
	e.stdout = out.bytes()
	if e.stop != "" {
		if t := strings.TrimSpace(errTail.String()); t != "" {
			e.err += "\nstderr (tail):\n" + t
		}
	}
	return e
}

// capped keeps up to max bytes and signals flood when more arrive (and
// discards the rest, so that the writer never blocks).
type capped struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	flood chan struct{}
	over  bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.over {
		return len(p), nil
	}
	if len(c.buf)+len(p) > c.max {
		c.over = true
		close(c.flood)
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

func (c *capped) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...)
}

// tail keeps the last n bytes written.
type tail struct {
	mu  sync.Mutex
	buf []byte
	n   int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.n {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.n:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
