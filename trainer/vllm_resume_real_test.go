package trainer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/metric"
)

// realVLLMResumeConfig is resumeConfig trained with GRPO on the default
// job's tiny model (heads of 32, which vLLM's CPU attention takes), an
// entropy bonus so that every update moves the weights, its rollouts on
// vLLM's CPU build, which the trainer starts on the run's vllm-weights.
// The server runs one sequence at a time without a prefix cache, so that
// each completion is computed alone, from the same request the same way
// whatever else the rollout sends (docs/rollout-engines.md). The command
// writes the server's process id to pidFile first.
func realVLLMResumeConfig(t *testing.T, python, dir, pidFile string, resume bool) config.Config {
	t.Helper()
	c := resumeConfig(dir)
	c.Run.Name = "resume-vllm"
	c.Run.Resume = resume
	c.Model.Tiny = config.Default().Model.Tiny
	c.Algorithm.Estimator = "grpo"
	c.Algorithm.EntropyCoef, c.Optim.LR = 0.05, 1e-3
	c.Rollout.Engine = "vllm"
	address, command := vllmCommand(t, python, filepath.Join(RunDir(c), "vllm-weights"), c.Env.MaxTokens,
		"--max-num-seqs", "1", "--no-enable-prefix-caching")
	c.Rollout.VLLM.Address = address
	c.Rollout.VLLM.Command = append([]string{"sh", "-c", `echo $$ >"$0" && exec "$@"`, pidFile}, command...)
	return c
}

// killBar SIGKILLs the process group of the server whose id is in pidFile
// when the first episode of its rollout ends, once.
type killBar struct {
	t       *testing.T
	pidFile string
	once    *sync.Once
}

func (b killBar) Add(int) {
	b.once.Do(func() {
		p, err := os.ReadFile(b.pidFile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(p)))
		if err != nil || pid <= 0 {
			b.t.Errorf("the server's process id: %q, %v", p, err)
			return
		}
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
			b.t.Errorf("kill the server's group %d: %v", pid, err)
		}
	})
}
func (killBar) Done() {}

// A GRPO run on vLLM's CPU build, started by the trainer, whose server is
// SIGKILLed (its whole process group) after the first episode of
// iteration 3's rollout ends with an error naming the server and saying
// it was killed; --resume starts a new server and continues from
// iteration 2's checkpoint to the same final weights, checkpoint and store
// as an uninterrupted run, bit for bit. In each of the uninterrupted
// run's four iterations the mismatch telemetry finds vLLM's logprobs the
// training forward's: the weights were synced after every update.
func TestRealVLLMResume(t *testing.T) {
	python := vllmPython(t)
	start := time.Now()
	refDir := t.TempDir()
	refCfg := realVLLMResumeConfig(t, python, refDir, filepath.Join(refDir, "pid"), false)
	if err := trainVLLM(t, refCfg, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("the uninterrupted run: %v", time.Since(start).Round(time.Second))
	// The server's weights were the policy's in every iteration: the
	// mismatch telemetry finds vLLM's logprobs the training forward's.
	trained := 0
	for _, m := range storedMetrics(t, filepath.Join(RunDir(refCfg), "store.db")) {
		if m.NTrain == 0 {
			continue
		}
		trained++
		if kl := m.Metrics[metric.MismatchKL]; !(kl <= realVLLMKL) {
			t.Errorf("iteration %d: mismatch KL %.3g: the server's weights were not the policy's", m.Iteration, kl)
		}
	}
	if trained != resumeIters {
		t.Errorf("%d iterations trained, want %d", trained, resumeIters)
	}

	t0 := time.Now()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	cfg := realVLLMResumeConfig(t, python, dir, pidFile, false)
	once, reached := &sync.Once{}, false
	err := trainVLLM(t, cfg, func(label string) Bar {
		if label != "iter 3 rollout" {
			return noBar{}
		}
		reached = true
		return killBar{t: t, pidFile: pidFile, once: once}
	})
	t.Logf("the killed run (%v): %v", time.Since(t0).Round(time.Second), err)
	if !reached {
		t.Fatal("iteration 3's rollout never started")
	}
	if err == nil || !strings.Contains(err.Error(), cfg.Rollout.VLLM.Address) ||
		!strings.Contains(err.Error(), "the vLLM server exited: signal: killed") ||
		!strings.Contains(err.Error(), filepath.Join(RunDir(cfg), "vllm.log")) {
		t.Fatalf("the run whose server was killed: %v, want an error naming the server, its exit and its log", err)
	}
	run := RunDir(cfg)
	if !latestIs(run, 2) {
		t.Fatal("the killed run's latest checkpoint is not iteration 2")
	}

	t0 = time.Now()
	if err := trainVLLM(t, realVLLMResumeConfig(t, python, dir, pidFile, true), nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("the resumed run: %v; %v in all", time.Since(t0).Round(time.Second), time.Since(start).Round(time.Second))
	sameRun(t, RunDir(refCfg), run)
}
