package mcp

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
)

// Where `make deps` installs published MCP servers from npm: the
// filesystem server (stdio) and the TypeScript SDK's reference server
// (streamable HTTP).
const (
	filesystemServer = "../../../third_party/npm/node_modules/.bin/mcp-server-filesystem"
	everythingServer = "../../../third_party/npm/node_modules/.bin/mcp-server-everything"
)

// npmServer returns the absolute path of an installed server, or skips.
func npmServer(t *testing.T, rel string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: published MCP servers cannot run")
	}
	bin, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s is not installed (make deps installs it with npm)", rel)
	}
	return bin
}

// A published server from npm, over stdio: its tools are listed with
// schemas envs accepts, and reading and listing files works.
func TestPublishedFilesystemServer(t *testing.T) {
	bin := npmServer(t, filesystemServer)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the answer is 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{Name: "fs", Command: bin, Args: []string{root}, Prefix: "fs_"})
	if len(s.Tools()) < 5 {
		t.Fatalf("only %d tools", len(s.Tools()))
	}
	r, err := call(t, toolNamed(t, s, "fs_read_text_file"), `{"path":"`+filepath.Join(root, "notes.txt")+`"}`)
	if err != nil || strings.TrimSpace(r.Content) != "the answer is 42" {
		t.Fatalf("read_text_file: %+v %v", r, err)
	}
	r, err = call(t, toolNamed(t, s, "fs_list_directory"), `{"path":"`+root+`"}`)
	if err != nil || !strings.Contains(r.Content, "notes.txt") {
		t.Fatalf("list_directory: %+v %v", r, err)
	}
	// Outside its root the server refuses: an error the model sees.
	_, err = call(t, toolNamed(t, s, "fs_read_text_file"), `{"path":"/etc/passwd"}`)
	if err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("read outside the root: %v", err)
	}
}

// startEverything runs the reference server over streamable HTTP on addr
// and waits until it listens.
func startEverything(t *testing.T, bin, addr string) *exec.Cmd {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("node", bin, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return cmd
		}
	}
	t.Fatalf("the everything server did not listen on %s", addr)
	return nil
}

// The TypeScript SDK's reference server over streamable HTTP (event
// stream answers, sessions): calls work, and when the server is killed
// with a call in flight and started again (without the old session), the
// call fails as the server's failure and the client opens a new session.
func TestPublishedServerOverHTTP(t *testing.T) {
	bin := npmServer(t, everythingServer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv := startEverything(t, bin, addr)
	s := startServer(t, Config{Name: "everything", URL: "http://" + addr + "/mcp"})
	r, err := call(t, toolNamed(t, s, "echo"), `{"message":"héllo"}`)
	if err != nil || r.Content != "Echo: héllo" {
		t.Fatalf("echo: %+v %v", r, err)
	}
	r, err = call(t, toolNamed(t, s, "get-sum"), `{"a":2,"b":3.5}`)
	if err != nil || !strings.Contains(r.Content, "5.5") {
		t.Fatalf("get-sum: %+v %v", r, err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := call(t, toolNamed(t, s, "trigger-long-running-operation"), `{"duration":30,"steps":3}`)
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	srv.Process.Kill()
	srv.Wait()
	select {
	case err := <-errc:
		if !envs.IsFailure(err) {
			t.Fatalf("in-flight call on a killed server: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight call did not fail when the server was killed")
	}
	startEverything(t, bin, addr)
	r, err = call(t, toolNamed(t, s, "echo"), `{"message":"again"}`)
	if err != nil || r.Content != "Echo: again" {
		t.Fatalf("after restart: %+v %v", r, err)
	}
	if n := s.Client().Sessions(); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
}
