package trainer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job that New refuses returns New's error and saves no config.yaml:
// the run's folder keeps what it had.
func TestRunJobRefusedLeavesNoConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	missing := filepath.Join(dir, "no-such-train.jsonl")
	cfg.Data.Source, cfg.Data.Train = "files", []string{missing}
	var out, errOut bytes.Buffer
	_, err := RunJob(context.Background(), cfg, JobOptions{Stdout: &out, Stderr: &errOut})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("RunJob = %v, want an error naming %s", err, missing)
	}
	if _, err := os.Stat(filepath.Join(RunDir(cfg), "config.yaml")); err == nil {
		t.Error("a refused job saved its config.yaml")
	}
	if out.Len() != 0 {
		t.Errorf("a refused job printed results:\n%s", out.String())
	}
}

// A device the binary cannot use (a CPU build asked for CUDA, or a CUDA
// build on a machine without one) is refused before the run's folder is
// made: no empty run is left behind.
func TestRunJobBadDeviceMakesNoRunFolder(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	cfg.Device.Device = "cuda:7"
	var out, errOut bytes.Buffer
	_, err := RunJob(context.Background(), cfg, JobOptions{Stdout: &out, Stderr: &errOut})
	if err == nil || !strings.Contains(err.Error(), "cuda:7") {
		t.Fatalf("RunJob = %v, want an error naming the device cuda:7", err)
	}
	if _, err := os.Stat(RunDir(cfg)); !os.IsNotExist(err) {
		t.Errorf("the refused job made its run folder %s (%v)", RunDir(cfg), err)
	}
}
