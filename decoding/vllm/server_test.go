package vllm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a stand-in vLLM server (TestMain): it
// serves /health and /v1/models at the port its value names.
const helperEnv = "AGENTRL_VLLM_TEST_SERVER"

// The stand-in's switches, in its environment: ignore SIGTERM; start a
// child in its process group and write the child's pid to the named file.
const (
	helperIgnoreTerm = "AGENTRL_VLLM_TEST_IGNORE_TERM"
	helperChildPID   = "AGENTRL_VLLM_TEST_CHILD_PID"
)

func TestMain(m *testing.M) {
	if port := os.Getenv(helperEnv); port != "" {
		standIn(port)
		return
	}
	os.Exit(m.Run())
}

// standIn is the stand-in server: a line to its log, then /health and
// /v1/models until it is killed (or, unless told to ignore it, SIGTERM).
func standIn(port string) {
	fmt.Println("stand-in vllm: starting")
	if os.Getenv(helperIgnoreTerm) != "" {
		signal.Ignore(syscall.SIGTERM)
	}
	if f := os.Getenv(helperChildPID); f != "" {
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.WriteFile(f, []byte(strconv.Itoa(child.Process.Pid)), 0o644)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"stand-in-model","object":"model"}]}`)
	})
	fmt.Fprintln(os.Stderr, http.ListenAndServe("127.0.0.1:"+port, mux))
	os.Exit(1)
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// standInConfig starts the test binary as the stand-in server, with env.
func standInConfig(t *testing.T, env ...string) ServerConfig {
	t.Helper()
	port := freePort(t)
	return ServerConfig{
		Address:        "http://127.0.0.1:" + port,
		Command:        []string{os.Args[0], "-test.run=^$"},
		Env:            append([]string{helperEnv + "=" + port}, env...),
		Log:            filepath.Join(t.TempDir(), "vllm.log"),
		StartupTimeout: 20 * time.Second,
		StopGrace:      5 * time.Second,
	}
}

// alive reports whether process pid exists (and is not a zombie of ours).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}

// A server already running is used as it is: ready once /health and
// /v1/models answer, its model id kept, left running by Close.
func TestStartConnectsToRunningServer(t *testing.T) {
	var healthy bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			if !healthy {
				healthy = true // the first poll finds it starting
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		case "/v1/models":
			io.WriteString(w, `{"data":[{"id":"/models/qwen"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s, err := Start(context.Background(), ServerConfig{Address: srv.URL, StartupTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s.Model() != "/models/qwen" || s.Address() != srv.URL {
		t.Errorf("model %q address %q, want /models/qwen %s", s.Model(), s.Address(), srv.URL)
	}
	s.Close()
	if _, err := http.Get(srv.URL + "/health"); err != nil {
		t.Errorf("the server is gone after Close: %v", err)
	}
}

// A server that never gets ready is an error once the startup timeout
// has passed, saying what it last answered.
func TestStartTimesOut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := Start(context.Background(), ServerConfig{Address: srv.URL, StartupTimeout: 600 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "not ready after 600ms (startup timeout; last: GET /health: 503 Service Unavailable)") {
		t.Errorf("error %v, want the startup timeout", err)
	}
}

// A started server writes its log to the file named, is ready when it
// answers, and Close stops its whole process group.
func TestStartedServerStopsWithItsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	cfg := standInConfig(t, helperChildPID+"="+pidFile)
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Model() != "stand-in-model" {
		t.Errorf("model %q, want stand-in-model", s.Model())
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(string(b))
	if !alive(child) {
		t.Fatalf("the stand-in's child %d is not running", child)
	}
	start := time.Now()
	s.Close()
	if exited, _ := s.Exited(0); !exited {
		t.Error("the server is still running after Close")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Close took %v: SIGTERM should have stopped it at once", took)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(child) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(child) {
		syscall.Kill(child, syscall.SIGKILL)
		t.Errorf("the server's child %d outlived it", child)
	}
	log, _ := os.ReadFile(cfg.Log)
	if !strings.Contains(string(log), "stand-in vllm: starting") {
		t.Errorf("log %q lacks the server's output", log)
	}
	s.Close() // a second Close is harmless
}

// A server that ignores SIGTERM is killed after the grace period.
func TestStartedServerKilledAfterGrace(t *testing.T) {
	cfg := standInConfig(t, helperIgnoreTerm+"=1")
	cfg.StopGrace = 300 * time.Millisecond
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Close()
	took := time.Since(start)
	exited, werr := s.Exited(0)
	if !exited {
		t.Fatal("the server is still running after Close")
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("exit %v, want killed by SIGKILL", werr)
	}
	if took < cfg.StopGrace {
		t.Errorf("killed after %v, before the grace period %v", took, cfg.StopGrace)
	}
}

// The server stops when the context it was started with ends.
func TestStartedServerStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, standInConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if exited, _ := s.Exited(5 * time.Second); exited {
		return
	}
	t.Error("the server still runs after its context ended")
	s.Close()
}

// A command that exits before it is ready is an error naming it, with the
// end of its log; one that never listens is stopped at the timeout.
func TestStartedServerFailures(t *testing.T) {
	t.Run("exits", func(t *testing.T) {
		cfg := standInConfig(t)
		cfg.Command = []string{"sh", "-c", "echo 'RuntimeError: no CPU platform' >&2; exit 3"}
		_, err := Start(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "exited before it was ready (exit status 3)") ||
			!strings.Contains(err.Error(), "RuntimeError: no CPU platform") || !strings.Contains(err.Error(), cfg.Log) {
			t.Errorf("error %v, want the exit, the log's path and its end", err)
		}
	})
	t.Run("never ready", func(t *testing.T) {
		cfg := standInConfig(t)
		pidFile := filepath.Join(t.TempDir(), "pid")
		cfg.Command = []string{"sh", "-c", "echo $$ > " + pidFile + "; echo loading weights; exec sleep 300"}
		cfg.StartupTimeout = 700 * time.Millisecond
		_, err := Start(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "not ready after 700ms") || !strings.Contains(err.Error(), "loading weights") {
			t.Errorf("error %v, want the startup timeout and the log's end", err)
		}
		b, _ := os.ReadFile(pidFile)
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid == 0 || alive(pid) {
			t.Errorf("the server (pid %d) still runs after its startup failed", pid)
		}
	})
	t.Run("no such command", func(t *testing.T) {
		cfg := standInConfig(t)
		cfg.Command = []string{"/nonexistent/vllm", "serve"}
		if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "start /nonexistent/vllm") {
			t.Errorf("error %v, want the command named", err)
		}
	})
	t.Run("no log", func(t *testing.T) {
		cfg := standInConfig(t)
		cfg.Log = ""
		if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "needs a log file") {
			t.Errorf("error %v", err)
		}
	})
}

// A started server killed from outside is reported exited, and how, once
// it is reaped: Exited waits for that.
func TestStartedServerKilledFromOutside(t *testing.T) {
	s, err := Start(context.Background(), standInConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if exited, _ := s.Exited(0); exited {
		t.Fatal("the server is reported exited while it runs")
	}
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	exited, werr := s.Exited(10 * time.Second)
	var ee *exec.ExitError
	if !exited || !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("after SIGKILL to its group: exited %v (%v), want killed by SIGKILL", exited, werr)
	}
}
