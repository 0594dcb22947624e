package main

import (
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/internal/progress"
	"github.com/agentrl/agentrl/job"
	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/dist"
)

// loadConfig builds the effective config: defaults, --config, key flags,
// --set; then validates it.
func loadConfig(c *cli.Context) (config.Config, error) {
	cfg := config.Default()
	if err := config.ApplyFlags(c, &cfg); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// startRun takes the run's folder (its lock and logging, job.OpenRun)
// and prepares its trainer; the closer ends the logging and releases the
// lock (close the trainer first). Only train runs as several
// ranks: started as one of several, sft and eval refuse rather than have
// every rank write the same run.
func startRun(c *cli.Context, cfg config.Config) (*trainer.Trainer, io.Closer, error) {
	if env, ranked, err := dist.FromEnv(); err == nil && ranked && env.World > 1 {
		return nil, nil, fmt.Errorf("trainer %s runs as one process, but this is rank %d of %d (RANK/WORLD_SIZE are set): start it without torchrun or srun", c.Command.Name, env.Rank, env.World)
	}
	log, closer, err := job.OpenRun(cfg)
	if err != nil {
		return nil, nil, err
	}
	t, err := trainer.New(c.Context, cfg, trainer.Options{Log: log, Progress: bars, GitRev: gitRev()})
	if err != nil {
		closer.Close()
		return nil, nil, err
	}
	return t, closer, nil
}

// bars draws progress bars on stderr when it is a terminal.
func bars(label string, total int) trainer.Bar { return progress.New(os.Stderr, label, total) }

// exitErr wraps an error as a CLI failure with exit code 1.
func exitErr(format string, a ...any) error { return cli.Exit(fmt.Sprintf(format, a...), 1) }
