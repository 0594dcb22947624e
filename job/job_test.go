package job

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trainer/config"
)

// jobConfig is the default job, named small, with its run folder under
// dir.
func jobConfig(dir string) config.Config {
	c := config.Default()
	c.Run.Dir, c.Run.Name = dir, "small"
	return c
}

// A job that New refuses returns New's error and saves no config.yaml:
// the run's folder keeps what it had.
func TestRunJobRefusedLeavesNoConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := jobConfig(dir)
	missing := filepath.Join(dir, "no-such-train.jsonl")
	cfg.Data.Source, cfg.Data.Train = "files", []string{missing}
	var out, errOut bytes.Buffer
	_, err := Run(context.Background(), cfg, Options{Stdout: &out, Stderr: &errOut})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Run = %v, want an error naming %s", err, missing)
	}
	if _, err := os.Stat(filepath.Join(trainer.RunDir(cfg), "config.yaml")); err == nil {
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
	cfg := jobConfig(dir)
	cfg.Device.Device = "cuda:7"
	var out, errOut bytes.Buffer
	_, err := Run(context.Background(), cfg, Options{Stdout: &out, Stderr: &errOut})
	if err == nil || !strings.Contains(err.Error(), "cuda:7") {
		t.Fatalf("Run = %v, want an error naming the device cuda:7", err)
	}
	if _, err := os.Stat(trainer.RunDir(cfg)); !os.IsNotExist(err) {
		t.Errorf("the refused job made its run folder %s (%v)", trainer.RunDir(cfg), err)
	}
}
