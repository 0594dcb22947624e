// Package job is a training job's lifecycle around the trainer: the ranks
// it launches or joins, the run folder's lock and logs, the effective
// config saved with the run, the trainer built, run and closed, and the
// results printed.
package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentrl/agentrl/internal/logging"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/models"
	"github.com/agentrl/agentrl/trainer/results"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trainer/warmstart"
)

// Options are a training job's surroundings, given by the command that
// starts it; Run does the rest.
type Options struct {
	// Progress draws progress bars (nil: none).
	Progress trainer.ProgressFunc
	// GitRev is recorded with the run.
	GitRev string
	// Signals, if set, is called once the job is about to build its
	// trainer: it returns the job's context, a channel closed on the first
	// interrupt (finish the iteration, checkpoint, stop) and a function
	// that stops listening. Nil: the context given to Run, no stop.
	Signals func() (context.Context, <-chan struct{}, func())
	// Stdout receives the results table and where the outputs are; Stderr
	// the effective config and the notices (nil: os.Stdout, os.Stderr).
	Stdout, Stderr io.Writer
	// Relaunch is the command line (without the program) each rank runs
	// when dist.nproc > 1 starts them from this process; LaunchGrace is
	// how long the surviving ranks get to stop by themselves before they
	// are killed.
	Relaunch    []string
	LaunchGrace time.Duration
}

// Run runs a training job from its validated configuration to its
// results: it launches the ranks (dist.nproc > 1) or joins the job's
// process group (torchrun, Slurm), sets up the run's logs, builds the
// trainer (trainer.New), saves the effective config as <run>/config.yaml, trains,
// and on the leader prints the results. It returns the trajectory store of
// a run that finished, on the leader, for the caller's end-of-job report;
// "" on the other ranks and when the job stopped before its end. An
// interrupted job (warmstart.ErrStopped, or a stop that checkpointed) is
// no error.
func Run(ctx context.Context, cfg config.Config, o Options) (string, error) {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	// The config as given is what the run saves; placeRank's per-rank
	// changes are not.
	y, err := cfg.YAML()
	if err != nil {
		return "", err
	}
	env, ranked, err := dist.FromEnv()
	if err != nil {
		return "", err
	}
	if !ranked && cfg.Dist.NProc > 1 {
		l, _, err := logging.New(cfg.Logging.Level, cfg.Logging.Format, o.Stderr, "")
		if err != nil {
			return "", err
		}
		return "", dist.Launch(cfg.Dist.NProc, o.Relaunch, o.LaunchGrace, l)
	}
	if ranked && env.World == 1 {
		ranked = false // a job of one rank is a single process
	}
	if ranked {
		placeRank(&cfg, env)
	}
	// A device this binary cannot use is refused before the run's folder,
	// its lock or its log exist.
	if _, err := torch.ParseDevice(cfg.Device.Device); err != nil {
		return "", err
	}
	log, closer, err := rankLogger(cfg, env, ranked)
	if err != nil {
		return "", err
	}
	defer closer.Close()
	var group *dist.Group
	if ranked {
		dev, err := torch.ParseDevice(cfg.Device.Device)
		if err != nil {
			return "", err
		}
		if group, err = dist.Join(env, dist.Options{Backend: cfg.Dist.Backend, Device: dev, Timeout: cfg.Dist.Timeout,
			CollectiveTimeout: cfg.Dist.CollectiveTimeout, BucketMB: cfg.Dist.BucketMB, Log: log}); err != nil {
			return "", err
		}
	}
	leader := group.Leader()
	var stop <-chan struct{}
	if o.Signals != nil {
		var done func()
		ctx, stop, done = o.Signals()
		defer done()
	}
	t, err := trainer.New(ctx, cfg, trainer.Options{Log: log, Progress: o.Progress, GitRev: o.GitRev, Dist: group, Stop: stop})
	if errors.Is(err, store.ErrLockWaitStopped) {
		fmt.Fprintf(o.Stderr, "%v\nstopped before the run began; %s\n", err, continueWith(cfg))
		return "", nil
	}
	if err != nil {
		return "", err
	}
	// Saved only once New has accepted the run: a refused start (the name
	// is taken, a bad checkpoint) leaves the run's config.yaml as it was.
	dir := trainer.RunDir(cfg)
	if leader {
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), y, 0o644); err != nil {
			t.Close()
			return "", err
		}
		fmt.Fprintf(o.Stderr, "effective config (saved to %s):\n%s\n", filepath.Join(dir, "config.yaml"), indent(string(y)))
	}
	res, runErr := t.Run(ctx, stop)
	storePath := t.StorePath()
	if err := t.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if errors.Is(runErr, warmstart.ErrStopped) {
		fmt.Fprintf(o.Stderr, "%v\n", runErr)
		return "", nil
	}
	if errors.Is(runErr, store.ErrLockWaitStopped) {
		fmt.Fprintf(o.Stderr, "%v\nstopped; what the latest checkpoint does not cover was not stored, and is redone: %s\n", runErr, continueWith(cfg))
		return "", nil
	}
	if runErr != nil {
		// No barrier on the way out: the other ranks see this one's
		// connections close, or its heartbeat stop.
		return "", runErr
	}
	if err := group.Close(); err != nil {
		return "", err
	}
	if !leader {
		return "", nil
	}
	if res == nil {
		fmt.Fprintf(o.Stderr, "stopped; checkpoint written. Continue with: %s\n", resumeCommand(cfg))
		return "", nil
	}
	outcomes, err := results.ReadOutcomes(storePath, res.RL())
	if err != nil {
		return "", fmt.Errorf("read the evaluation outcomes: %w", err)
	}
	results.Print(o.Stdout, res, outcomes.Intervals())
	fmt.Fprintf(o.Stdout, "\nstore:  %s   (query it: trainer rollouts sql --store %s \"SELECT ...\")\n", storePath, storePath)
	fmt.Fprintf(o.Stdout, "policy: %s\n", filepath.Join(dir, "final"))
	return storePath, nil
}

// resumeCommand is the command that continues the run from its latest
// checkpoint.
func resumeCommand(cfg config.Config) string {
	resume := "trainer train --run " + cfg.Run.Name + " --resume"
	if cfg.Run.Dir != config.Default().Run.Dir {
		resume += " --run-dir " + cfg.Run.Dir
	}
	return resume
}

// continueWith says how to go on with a run that stopped where its latest
// checkpoint, if any, is: resume from it, or, without one, start again.
func continueWith(cfg config.Config) string {
	if ck, _, err := models.FindCheckpoint(trainer.RunDir(cfg)); err == nil && ck != "" {
		return "continue with: " + resumeCommand(cfg)
	}
	return "the run has no checkpoint yet: run it again to start over"
}

// indent indents every line of s by two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
