// Package regulartest holds the hostile-file check that loaders of several
// packages share in their tests.
package regulartest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RefusesFIFO replaces path with a named pipe and runs load, which must
// return within 10 s (a loader that opens the pipe blocks forever) with an
// error that names the file and says it is not a regular file. It skips t
// where named pipes cannot be made.
func RefusesFIFO(t *testing.T, path string, load func() error) {
	t.Helper()
	name := filepath.Base(path)
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		// a reader still blocked in open(2) is released by a writer
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	done := make(chan error, 1)
	go func() { done <- load() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a FIFO as %s: %v, want a refusal naming it", name, err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("a FIFO as %s: the load blocked", name)
	}
}
