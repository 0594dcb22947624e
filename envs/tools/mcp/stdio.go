package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentrl/agentrl/envs"
)

// stdioTransport runs an MCP server as a child process and exchanges
// newline-delimited JSON-RPC messages over its stdin and stdout. A reader
// goroutine routes each response to the call waiting for its id, so calls
// run concurrently.
type stdioTransport struct {
	cmd        *exec.Cmd
	stdin      *os.File // the client's end of the server's stdin
	stderr     *tail
	maxMessage int           // bytes of one line of output
	wsem       chan struct{} // one message written at a time

	exited    chan struct{} // closed when the server process has been reaped
	waitErr   error         // how it exited, set before exited is closed
	abandoned atomic.Bool   // its output was closed unread: a process it started kept it open
	bad       malformedNote // the first malformed message it sent

	mu      sync.Mutex
	pending map[int64]chan *message
	sent    [2]int64      // the first and last request ids sent (ids start at 1)
	done    chan struct{} // closed when the session is over: output ended and process reaped
	err     error         // why it ended, set before done is closed
}

// stopGrace is how long the steps of stopping a server each wait: for it
// to exit after its stdin is closed, then after SIGTERM, and for its
// output to end once it has exited.
const stopGrace = time.Second

// startStdio starts command with args; env entries (KEY=VALUE) are added
// to the trainer's environment. The server runs in its own process group,
// so that whatever it started is stopped with it, and is killed if the
// trainer dies (even by SIGKILL) before stopping it. A line of its output
// longer than maxMessage bytes breaks the session.
func startStdio(command string, args, env []string, maxMessage int) (*stdioTransport, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = stopGrace // a child of the server holding stderr open does not hold up Wait
	// Pipes of our own rather than StdinPipe and StdoutPipe: writes get
	// deadlines, and Wait must not close stdout before the last response
	// is read.
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdin.Close()
		return nil, err
	}
	t := &stdioTransport{cmd: cmd, stdin: stdin, stderr: newTail(2048), maxMessage: maxMessage,
		wsem: make(chan struct{}, 1), exited: make(chan struct{}), pending: map[int64]chan *message{}, done: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, t.stderr
	started := make(chan error)
	go t.run(started)
	err = <-started
	stdinR.Close()
	stdoutW.Close()
	if err != nil {
		stdout.Close()
		stdin.Close()
		return nil, fmt.Errorf("start %s: %w", command, err)
	}
	go t.read(stdout)
	return t, nil
}

// run starts the server and reaps it, then kills its process group:
// nothing the server started outlives it or keeps its output open. The
// parent-death signal is sent when the thread that started the server
// ends, so run keeps its goroutine on that thread until the server is
// reaped; the thread ends with it.
func (t *stdioTransport) run(started chan<- error) {
	runtime.LockOSThread()
	err := t.cmd.Start()
	started <- err
	if err != nil {
		return
	}
	t.waitErr = t.cmd.Wait()
	t.signalGroup(syscall.SIGKILL)
	close(t.exited)
}

// signalGroup sends sig to the server's process group.
func (t *stdioTransport) signalGroup(sig syscall.Signal) {
	_ = syscall.Kill(-t.cmd.Process.Pid, sig) // a group already gone is fine
}

// errTooLong ends reading a line over maxMessage bytes.
var errTooLong = errors.New("line too long")

// readLine reads one line of at most max bytes, newline included; a
// longer one is errTooLong, having held no more than max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, errTooLong
		}
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// read routes the server's messages until its output ends (the server and
// everything it started are gone, or it closed its output, and then it is
// stopped), records why, and fails every waiting call. Output still open
// stopGrace after the server exited is abandoned.
func (t *stdioTransport) read(stdout *os.File) {
	read := make(chan struct{})
	go func() {
		<-t.exited
		select {
		case <-read:
		case <-time.After(stopGrace):
			t.abandoned.Store(true)
			stdout.Close() // ends the read below
		}
	}()
	r := bufio.NewReaderSize(stdout, 64<<10)
	var readErr error
	for {
		line, err := readLine(r, t.maxMessage)
		if len(bytes.TrimSpace(line)) > 0 {
			t.route(line)
		}
		if err != nil {
			readErr = err
			break
		}
	}
	close(read)
	stdout.Close()
	if errors.Is(readErr, errTooLong) {
		t.signalGroup(syscall.SIGKILL)
	}
	select {
	case <-t.exited:
	case <-time.After(stopGrace):
		t.signalGroup(syscall.SIGKILL) // it closed its output but went on running
		<-t.exited
	}
	why := "the server closed its output"
	switch {
	case errors.Is(readErr, errTooLong):
		why = fmt.Sprintf("a message from the server is over %d bytes (tools.mcp[].max_message_mb)", t.maxMessage)
	case t.abandoned.Load():
		why = "the server exited, but a process it started kept its output open"
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
	t.err = t.bad.wrap(fmt.Errorf("%w: %s", errBroken, why))
	t.mu.Unlock()
	close(t.done)
}

// route hands a response to its caller and answers a server's request;
// notifications are dropped, and so are malformed messages, the first of
// which is kept for the errors of calls that then fail.
func (t *stdioTransport) route(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		t.bad.note(err.Error(), line)
		return
	}
	switch {
	case m.isResponse():
		id, ok := m.intID()
		if !ok {
			t.bad.note("a response whose id is not one the client sends", line)
			return
		}
		t.mu.Lock()
		ch := t.pending[id]
		delete(t.pending, id)
		sent := id >= t.sent[0] && id <= t.sent[1]
		t.mu.Unlock()
		switch {
		case ch != nil:
			ch <- &m
		case !sent: // a late answer to a call that gave up is no fault
			t.bad.note(fmt.Sprintf("a response to request %d, which was not sent", id), line)
		}
	case m.Method != "" && len(m.ID) > 0:
		go t.writeWithin(answerServerRequest(&m), stopGrace) // a dead server is noticed by the reader
	case m.Method == "":
		t.bad.note("neither a request, a response nor a notification", line)
	}
}

// write sends one message and its newline before ctx ends. A message the
// server did not take in time, or took in part, breaks the session: the
// server does not read its stdin, and what it reads next would be a torn
// message.
func (t *stdioTransport) write(ctx context.Context, b []byte) error {
	select {
	case t.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-t.wsem }()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := t.stdin.SetWriteDeadline(time.Time{}); err != nil {
		return fmt.Errorf("%w: writing to the server: %v", errBroken, err)
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		t.stdin.SetWriteDeadline(time.Now())
		close(fired)
	})
	_, err := t.stdin.Write(append(b, '\n'))
	if !stop() {
		<-fired // the next write must not meet this deadline
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: the server did not take the message in time (it does not read its stdin)", errBroken)
	case err != nil:
		return fmt.Errorf("%w: writing to the server: %v", errBroken, err)
	}
	return nil
}

// writeWithin writes a message within d.
func (t *stdioTransport) writeWithin(b []byte, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return t.write(ctx, b)
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
	if t.sent[0] == 0 {
		t.sent[0] = id
	}
	t.sent[1] = max(t.sent[1], id)
	t.mu.Unlock()
	forget := func() {
		t.mu.Lock()
		delete(t.pending, id)
		t.mu.Unlock()
	}
	if err := t.write(ctx, b); err != nil {
		forget()
		if errors.Is(err, errBroken) {
			return nil, t.brokenErr(err)
		}
		return nil, t.bad.wrap(err)
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
		go cancelRequest(t, id, ctx.Err())
		return nil, t.bad.wrap(ctx.Err())
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
	return t.bad.wrap(err)
}

func (t *stdioTransport) notify(ctx context.Context, method string, params any) error {
	b, err := encodeRequest(-1, method, params)
	if err != nil {
		return err
	}
	return t.write(ctx, b)
}

func (t *stdioTransport) setProtocolVersion(string) {}

// close stops the server within a bounded time: it closes the server's
// stdin and gives it stopGrace to exit, then SIGTERM and stopGrace more,
// then kills its process group. Output that a process the server started
// keeps open is abandoned stopGrace after the server exited.
func (t *stdioTransport) close() error {
	t.stdin.Close()
	if !t.exitsWithin(stopGrace) {
		t.signalGroup(syscall.SIGTERM)
		if !t.exitsWithin(stopGrace) {
			t.signalGroup(syscall.SIGKILL)
		}
	}
	<-t.done
	return nil
}

// exitsWithin reports whether the server has exited within d.
func (t *stdioTransport) exitsWithin(d time.Duration) bool {
	select {
	case <-t.exited:
		return true
	case <-time.After(d):
		return false
	}
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

// String is the kept text, trimmed and Printable.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return envs.Printable(strings.TrimSpace(string(t.buf)))
}
