package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stdioTransport runs an MCP server as a child process and exchanges
// newline-delimited JSON-RPC messages over its stdin and stdout. A reader
// goroutine routes each response to the call waiting for its id, so calls
// run concurrently.
type stdioTransport struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tail
	wmu    sync.Mutex // one message written at a time

	exited  chan struct{} // closed when the server process has been reaped
	waitErr error         // how it exited, set before exited is closed

	mu      sync.Mutex
	pending map[int64]chan *message
	done    chan struct{} // closed when the session is over: output ended and process reaped
	err     error         // why it ended, set before done is closed
}

// stopGrace is how long close waits for a server to exit after its stdin
// is closed before it is killed.
const stopGrace = time.Second

// startStdio starts command with args; env entries (KEY=VALUE) are added
// to the trainer's environment. The server runs in its own process group,
// so that whatever it started is stopped with it.
func startStdio(command string, args, env []string) (*stdioTransport, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = stopGrace // a child of the server holding stderr open does not hold up Wait
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of our own rather than StdoutPipe: Wait must not close it
	// before the last response is read.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	t := &stdioTransport{cmd: cmd, stdin: stdin, stderr: newTail(2048), exited: make(chan struct{}),
		pending: map[int64]chan *message{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w, t.stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		stdin.Close()
		return nil, fmt.Errorf("start %s: %w", command, err)
	}
	go t.wait()
	go t.read(stdout)
	return t, nil
}

// wait reaps the server, then kills its process group: nothing the server
// started outlives it or keeps its output open.
func (t *stdioTransport) wait() {
	t.waitErr = t.cmd.Wait()
	t.killGroup()
	close(t.exited)
}

// killGroup sends SIGKILL to the server's process group.
func (t *stdioTransport) killGroup() {
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL) // a group already gone is fine
}

// read routes the server's messages until its stdout ends (the server and
// everything it started are gone, or it closed its output, and then it is
// stopped), records why, and fails every waiting call.
func (t *stdioTransport) read(stdout *os.File) {
	defer stdout.Close()
	r := bufio.NewReader(stdout)
	var readErr error
	for {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			t.route(line)
		}
		if err != nil {
			readErr = err
			break
		}
	}
	select {
	case <-t.exited:
	case <-time.After(stopGrace):
		t.killGroup() // it closed its output but went on running
		<-t.exited
	}
	why := "the server closed its output"
	switch {
	case t.waitErr != nil:
		why = "the server exited: " + t.waitErr.Error()
	case !errors.Is(readErr, io.EOF):
		why = "reading the server's output: " + readErr.Error()
	case t.cmd.ProcessState != nil:
		why = "the server exited: " + t.cmd.ProcessState.String()
	}
	if s := t.stderr.String(); s != "" {
		why += "; its last stderr: " + s
	}
	t.mu.Lock()
	t.err = fmt.Errorf("%w: %s", errBroken, why)
	t.mu.Unlock()
	close(t.done)
}

// route hands a response to its caller and answers a server's request;
// notifications and unparseable lines are dropped.
func (t *stdioTransport) route(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return
	}
	switch {
	case m.isResponse():
		id, ok := m.intID()
		if !ok {
			return
		}
		t.mu.Lock()
		ch := t.pending[id]
		delete(t.pending, id)
		t.mu.Unlock()
		if ch != nil {
			ch <- &m
		}
	case m.Method != "" && len(m.ID) > 0:
		go t.write(answerServerRequest(&m)) // a dead server is noticed by the reader
	}
}

// write sends one message and its newline.
func (t *stdioTransport) write(b []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if _, err := t.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%w: writing to the server: %v", errBroken, err)
	}
	return nil
}

func (t *stdioTransport) call(ctx context.Context, id int64, method string, params any) (json.RawMessage, error) {
	b, err := encodeRequest(id, method, params)
	if err != nil {
		return nil, err
	}
	ch := make(chan *message, 1)
	t.mu.Lock()
	if t.err != nil {
		err := t.err
		t.mu.Unlock()
		return nil, err
	}
	t.pending[id] = ch
	t.mu.Unlock()
	forget := func() {
		t.mu.Lock()
		delete(t.pending, id)
		t.mu.Unlock()
	}
	if err := t.write(b); err != nil {
		forget()
		return nil, t.brokenErr(err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-t.done:
		forget()
		return nil, t.brokenErr(nil)
	case <-ctx.Done():
		forget()
		cancelRequest(t, id, ctx.Err())
		return nil, ctx.Err()
	}
}

// brokenErr prefers the reader's account of a dead server over a write
// error; with the reader still running it returns err.
func (t *stdioTransport) brokenErr(err error) error {
	select {
	case <-t.done:
	case <-time.After(100 * time.Millisecond): // a write to a dead pipe usually races the reader
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.err
	}
	return err
}

func (t *stdioTransport) notify(_ context.Context, method string, params any) error {
	b, err := encodeRequest(-1, method, params)
	if err != nil {
		return err
	}
	return t.write(b)
}

func (t *stdioTransport) setProtocolVersion(string) {}

// close closes the server's stdin, gives it stopGrace to exit, then kills
// its process group.
func (t *stdioTransport) close() error {
	t.stdin.Close()
	select {
	case <-t.done:
	case <-time.After(stopGrace):
		t.killGroup()
	}
	<-t.done
	return nil
}

// tail keeps the last bytes written to it: a server's stderr, quoted when
// it dies.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
