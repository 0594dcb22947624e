package mcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// filesystemServer is where `make deps` installs the published MCP
// filesystem server (@modelcontextprotocol/server-filesystem, from npm).
const filesystemServer = "../../../third_party/npm/node_modules/.bin/mcp-server-filesystem"

// A published server from npm, over stdio: its tools are listed with
// schemas envs accepts, and reading and listing files works.
func TestPublishedFilesystemServer(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the published MCP filesystem server cannot run")
	}
	bin, err := filepath.Abs(filesystemServer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("@modelcontextprotocol/server-filesystem is not installed at %s (make deps installs it with npm)", filesystemServer)
	}
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
