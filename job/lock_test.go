package job

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trainer"
)

// One writer per run folder: a second lock of it (another open, as a
// second process makes) is refused naming the holder's PID, until the
// first is released.
func TestRunLockRefusesSecondWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs", "r")
	first, err := lockRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	pid := fmt.Sprintf("process %d holds its lock %s", os.Getpid(), filepath.Join(dir, "run.lock"))
	if _, err := lockRun(dir); err == nil || !strings.Contains(err.Error(), pid) {
		t.Fatalf("second lock: err = %v, want one saying %q", err, pid)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := lockRun(dir)
	if err != nil {
		t.Fatalf("lock after the first was released: %v", err)
	}
	again.Close()
}

// A job started on a run folder that another writer holds fails before
// it writes anything there: no log, no config.yaml, the files it holds
// unchanged.
func TestRunJobRefusedWhileLocked(t *testing.T) {
	dir := t.TempDir()
	cfg := jobConfig(dir)
	cfg.Data.Source, cfg.Data.Train = "files", []string{filepath.Join(dir, "no-such-train.jsonl")} // fails fast if not refused
	run := trainer.RunDir(cfg)
	holder, err := lockRun(run)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	winner := []byte("the other writer's config\n")
	if err := os.WriteFile(filepath.Join(run, "config.yaml"), winner, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	_, err = Run(context.Background(), cfg, Options{Stdout: &out, Stderr: &errOut})
	if want := fmt.Sprintf("process %d holds its lock", os.Getpid()); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run = %v, want an error saying %q", err, want)
	}
	if got, err := os.ReadFile(filepath.Join(run, "config.yaml")); err != nil || !bytes.Equal(got, winner) {
		t.Errorf("config.yaml is now %q (%v), want the other writer's", got, err)
	}
	if _, err := os.Stat(filepath.Join(run, "log.jsonl")); err == nil {
		t.Error("the refused job wrote log.jsonl")
	}
}
