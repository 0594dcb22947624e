package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// While a process holds a run's folder (the flock of <run>/run.lock that
// train, sft and eval take), a train or sft of that run fails at once,
// naming the holder's PID, and writes nothing there.
func TestRunFolderLocked(t *testing.T) {
	t.Parallel() // independent of the shared run
	runs := t.TempDir()
	dir := filepath.Join(runs, "busy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "run.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(lock, "%d\n", os.Getpid()); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("process %d holds its lock", os.Getpid())
	// Were the lock not taken, the missing demonstrations would end
	// either command soon.
	missing := filepath.Join(t.TempDir(), "none.jsonl")
	for _, cmd := range []string{"train", "sft"} {
		fails(t, []string{want}, append([]string{cmd, "--run-dir", runs, "--run", "busy", "--sft-data", missing}, tinyRun...)...)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("the run folder holds %d entries (%v), want only run.lock", len(entries), err)
	}
}
