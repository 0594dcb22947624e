package vllm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ServerConfig says where a vLLM server is and, optionally, how to start
// it.
type ServerConfig struct {
	// Address is the server's base URL (http://host:port), where it listens
	// or, with Command, will listen.
	Address string
	// Command, when not empty, is the argv that starts the server (e.g.
	// vllm serve MODEL --port 8000 --skip-tokenizer-init); it must listen
	// at Address. Empty: a server already running at Address is used.
	Command []string
	// Env entries (KEY=VALUE) are added to the trainer's environment for
	// Command. The weight routes need VLLM_SERVER_DEV_MODE=1 (see
	// DevModeEnv).
	Env []string
	// Log is the file the started server's stdout and stderr are written
	// to (created or truncated).
	Log string
	// StartupTimeout bounds the wait for the server to be ready, started or
	// not.
	StartupTimeout time.Duration
	// StopGrace is how long a started server has to exit after SIGTERM
	// before its process group is killed (0: DefaultStopGrace).
	StopGrace time.Duration
	// RequestTimeout bounds each request of the Client (0: none beyond the
	// request's context).
	RequestTimeout time.Duration
}

// LoRAUpdateEnv is the environment entry vLLM needs to serve
// /v1/load_lora_adapter (LoadAdapter).
const LoRAUpdateEnv = "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True"

// DevModeEnv is the environment entry vLLM needs to serve the routes of
// weight updates (/pause, /resume, /collective_rpc, /reset_prefix_cache,
// /update_weight_version, /init_weight_transfer_engine and the rest):
// without it they are not registered and answer 404.
const DevModeEnv = "VLLM_SERVER_DEV_MODE=1"

// DefaultStopGrace is the time a started server has to exit after SIGTERM.
const DefaultStopGrace = 10 * time.Second

// pollInterval is how often readiness is asked for.
const pollInterval = 250 * time.Millisecond

// Server is a vLLM server ready to generate: one agentrl started (and
// stops with Close, or when the context given to Start ends) or one that
// was already running.
type Server struct {
	// Client talks to the server.
	*Client

	cmd       *exec.Cmd
	log       *os.File
	logPath   string
	grace     time.Duration
	exited    chan struct{} // closed when the started process has been reaped
	waitErr   error         // how it exited, set before exited is closed
	closeOnce sync.Once
	stopWatch chan struct{} // closed by Close: the context no longer stops the server
}

// Start connects to the server of cfg, starting it first when cfg.Command
// is set, and waits until it answers /health and lists its model at
// /v1/models, for at most cfg.StartupTimeout. A started server runs in a
// process group of its own with its output in cfg.Log; it is stopped
// (SIGTERM, then SIGKILL after the grace period, to the whole group) by
// Close, when ctx ends, and by the kernel should the trainer die first. A
// server that exits or is not ready in time is an error naming it and
// its log.
func Start(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.StartupTimeout <= 0 {
		return nil, fmt.Errorf("vllm: startup timeout %v, want > 0", cfg.StartupTimeout)
	}
	c, err := NewClient(cfg.Address, cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	s := &Server{Client: c, grace: cfg.StopGrace, stopWatch: make(chan struct{})}
	if s.grace <= 0 {
		s.grace = DefaultStopGrace
	}
	if len(cfg.Command) > 0 {
		if err := s.start(cfg); err != nil {
			return nil, err
		}
		go s.watch(ctx)
	}
	if err := s.waitReady(ctx, cfg.StartupTimeout); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// start starts cfg.Command with its output in cfg.Log.
func (s *Server) start(cfg ServerConfig) error {
	if cfg.Log == "" {
		return errors.New("vllm: a started server needs a log file")
	}
	log, err := os.Create(cfg.Log)
	if err != nil {
		return fmt.Errorf("vllm: server log: %w", err)
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s.cmd, s.log, s.logPath, s.exited = cmd, log, cfg.Log, make(chan struct{})
	started := make(chan error)
	go s.run(started)
	if err := <-started; err != nil {
		log.Close()
		return fmt.Errorf("vllm: start %s: %w", cfg.Command[0], err)
	}
	return nil
}

// run starts the server and reaps it, then kills what is left of its
// process group. The parent-death signal is sent when the thread that
// started the process ends, so run keeps its goroutine on that thread
// until the process is reaped; the thread ends with it.
func (s *Server) run(started chan<- error) {
	runtime.LockOSThread()
	err := s.cmd.Start()
	started <- err
	if err != nil {
		return
	}
	s.waitErr = s.cmd.Wait()
	s.signal(syscall.SIGKILL)
	s.log.Close()
	close(s.exited)
}

// watch stops the server when ctx ends, unless Close came first.
func (s *Server) watch(ctx context.Context) {
	select {
	case <-ctx.Done():
		s.Close()
	case <-s.stopWatch:
	}
}

// signal sends sig to the started server's process group.
func (s *Server) signal(sig syscall.Signal) {
	_ = syscall.Kill(-s.cmd.Process.Pid, sig) // a group already gone is fine
}

// Close stops a started server: SIGTERM to its process group, then
// SIGKILL after the grace period; it returns once the process is reaped.
// A server agentrl did not start is left running. Close is safe to call
// more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.stopWatch)
		if s.cmd == nil {
			return
		}
		s.signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(s.grace):
			s.signal(syscall.SIGKILL)
			<-s.exited
		}
	})
}

// Exited reports whether a started server has exited, and how, waiting at
// most within for it to (a connection to a killed server may fail a moment
// before its process is reaped).
func (s *Server) Exited(within time.Duration) (bool, error) {
	if s.cmd == nil {
		return false, nil
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case <-s.exited:
	default:
		select {
		case <-s.exited:
		case <-timer.C:
			return false, nil
		}
	}
	return true, s.waitErr
}

// waitReady polls /health and then /v1/models until the server answers
// both, the started process exits, ctx ends or timeout passes.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		last = s.ready(ctx)
		if last == nil {
			return nil
		}
		var exited <-chan struct{}
		if s.cmd != nil {
			exited = s.exited
		}
		select {
		case <-exited:
			if ctx.Err() == context.Canceled {
				return fmt.Errorf("vllm: waiting for the server at %s: %w", s.base, ctx.Err())
			}
			return fmt.Errorf("vllm: server %q exited before it was ready (%v); its log %s ends:\n%s", strings.Join(s.cmd.Args, " "), s.waitErr, s.logPath, logTail(s.logPath))
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("vllm: server at %s not ready after %v (startup timeout; last: %v)%s", s.base, timeout, last, s.logNote())
			}
			return fmt.Errorf("vllm: waiting for the server at %s: %w", s.base, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// logNote points at a started server's log.
func (s *Server) logNote() string {
	if s.cmd == nil {
		return ""
	}
	return "; its log " + s.logPath + " ends:\n" + logTail(s.logPath)
}

// ready asks /health, then /v1/models, and keeps the first model's id.
func (s *Server) ready(ctx context.Context) error {
	if _, err := s.get(ctx, "/health"); err != nil {
		return err
	}
	body, err := s.get(ctx, "/v1/models")
	if err != nil {
		return err
	}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &models); err != nil {
		return fmt.Errorf("GET /v1/models: malformed response: %v", err)
	}
	if len(models.Data) == 0 || models.Data[0].ID == "" {
		return errors.New("GET /v1/models: no model listed")
	}
	s.model = models.Data[0].ID
	return nil
}

// get is a GET of path that must answer 200.
func (s *Server) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return body, nil
}

// logTail is the end of the log at path, enough to see why a server
// failed.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(unreadable: %v)", err)
	}
	const n = 3000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
