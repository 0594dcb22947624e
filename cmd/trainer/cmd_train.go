package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/internal/logging"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/report"
)

func trainCommand() *cli.Command {
	flags := append(configFlags(),
		&cli.StringFlag{Name: "resume", Usage: "continue the run named `RUN` from its latest checkpoint"},
		&cli.BoolFlag{Name: "dry-run", Usage: "load and check everything (data, index, tokenizer, model config, memory), then stop"},
		&cli.BoolFlag{Name: "no-report", Usage: "do not write the HTML report at the end"},
	)
	return &cli.Command{
		Name:  "train",
		Usage: "train an agent with RL (no arguments: the built-in CPU demo job)",
		Description: "Examples:\n" +
			"  trainer train                                   # the default job: synthetic world, tiny model, GRPO\n" +
			"  trainer train --config examples/qwen2.5-3b-hotpotqa-grpo.yaml\n" +
			"  trainer train --estimator gae --set algorithm.loss_mask=false --run-name ppo-no-loss-mask\n" +
			"  trainer train --resume default                  # continue a stopped run\n" +
			"  trainer train --nproc 2                         # two data-parallel ranks on this machine\n" +
			"  torchrun --nproc-per-node 8 --no-python bin/trainer train --config my.yaml  # or Slurm, Kubernetes\n" +
			"  trainer train --dry-run --config my.yaml        # check a config without training",
		Flags: flags,
		Action: func(c *cli.Context) error {
			cfg, err := trainConfig(c)
			if err != nil {
				return err
			}
			if c.Bool("dry-run") {
				return dryRun(c, cfg)
			}
			// The config as given is what the run saves; placeRank's
			// per-rank changes are not.
			y, err := cfg.YAML()
			if err != nil {
				return err
			}
			env, ranked, err := dist.FromEnv()
			if err != nil {
				return err
			}
			if !ranked && cfg.Dist.NProc > 1 {
				l, _, err := logging.New(cfg.Logging.Level, cfg.Logging.Format, os.Stderr, "")
				if err != nil {
					return err
				}
				return dist.Launch(cfg.Dist.NProc, os.Args[1:], launchGrace, l)
			}
			if ranked && env.World == 1 {
				ranked = false // a job of one rank is a single process
			}
			if ranked {
				placeRank(&cfg, env)
			}
			log, closer, err := rankLogger(cfg, env, ranked)
			if err != nil {
				return err
			}
			defer closer.Close()
			var group *dist.Group
			if ranked {
				dev, err := torch.ParseDevice(cfg.Device.Device)
				if err != nil {
					return err
				}
				if group, err = dist.Join(env, dist.Options{Backend: cfg.Dist.Backend, Device: dev, Timeout: cfg.Dist.Timeout,
					CollectiveTimeout: cfg.Dist.CollectiveTimeout, BucketMB: cfg.Dist.BucketMB, Log: log}); err != nil {
					return err
				}
			}
			leader := group.Leader()
			ctx, stop, done := signalContext()
			defer done()
			t, err := trainer.New(ctx, cfg, trainer.Options{Log: log, Progress: bars, GitRev: gitRev(), Dist: group})
			if err != nil {
				return err
			}
			// Saved only once New has accepted the run: a refused start
			// (the name is taken, a bad checkpoint) leaves the run's
			// config.yaml as it was.
			dir := trainer.RunDir(cfg)
			if leader {
				if err := os.WriteFile(filepath.Join(dir, "config.yaml"), y, 0o644); err != nil {
					t.Close()
					return err
				}
				fmt.Fprintf(os.Stderr, "effective config (saved to %s):\n%s\n", filepath.Join(dir, "config.yaml"), indent(string(y)))
			}
			res, runErr := t.Run(ctx, stop)
			storePath := t.StorePath()
			if err := t.Close(); err != nil && runErr == nil {
				runErr = err
			}
			if errors.Is(runErr, trainer.ErrStopped) {
				fmt.Fprintf(os.Stderr, "%v\n", runErr)
				return nil
			}
			if runErr != nil {
				// No barrier on the way out: the other ranks see this
				// one's connections close, or its heartbeat stop.
				return runErr
			}
			if err := group.Close(); err != nil {
				return err
			}
			if !leader {
				return nil
			}
			if res == nil {
				resume := "trainer train --resume " + cfg.Run.Name
				if cfg.Run.Dir != config.Default().Run.Dir {
					resume += " --run-dir " + cfg.Run.Dir
				}
				fmt.Fprintf(os.Stderr, "stopped; checkpoint written. Continue with: %s\n", resume)
				return nil
			}
			printResults(os.Stdout, res)
			fmt.Printf("\nstore:  %s   (query it: trainer rollouts sql --store %s \"SELECT ...\")\n", storePath, storePath)
			fmt.Printf("policy: %s\n", filepath.Join(dir, "final"))
			if !c.Bool("no-report") {
				html, err := report.Write(storePath, filepath.Join(dir, "report"))
				if err != nil {
					return fmt.Errorf("report: %w", err)
				}
				fmt.Printf("report: %s\n", html)
			}
			return nil
		},
	}
}

// launchGrace is how long the --nproc launcher lets the surviving ranks
// stop by themselves (SIGTERM) before it kills them.
const launchGrace = 10 * time.Second

// placeRank adapts the config to this rank's place on its machine: the
// cores are shared among the machine's ranks, and on CUDA each rank
// takes the GPU of its LOCAL_RANK.
func placeRank(cfg *config.Config, env dist.Env) {
	if cfg.Device.Threads == 0 {
		cfg.Device.Threads = max(1, runtime.NumCPU()/env.LocalWorld)
	}
	if strings.HasPrefix(cfg.Device.Device, "cuda") {
		cfg.Device.Device = fmt.Sprintf("cuda:%d", env.LocalRank)
	}
}

// rankLogger is runLogger for rank 0 (or a single process); the other
// ranks log warnings and errors to stderr only, tagged with their rank.
func rankLogger(cfg config.Config, env dist.Env, ranked bool) (zerolog.Logger, io.Closer, error) {
	if !ranked || env.Rank == 0 {
		l, c, err := runLogger(cfg)
		if ranked {
			l = l.With().Int("rank", 0).Logger()
		}
		return l, c, err
	}
	l, c, err := logging.New(cfg.Logging.Level, cfg.Logging.Format, os.Stderr, "")
	if err != nil {
		return l, c, err
	}
	l = logging.WithRun(l, cfg.Run.Name).With().Int("rank", env.Rank).Logger()
	return l.Level(max(l.GetLevel(), zerolog.WarnLevel)), c, nil
}

// trainConfig is loadConfig for train. A resumed run (--resume RUN, or
// run.resume) starts from the config.yaml saved in its folder, with the
// command line applied over it, so it continues with the data, model and
// settings it began with; only the flags given change anything.
func trainConfig(c *cli.Context) (config.Config, error) {
	cfg := config.Default()
	if err := config.ApplyFlags(c, &cfg); err != nil {
		return cfg, err
	}
	if r := c.String("resume"); r != "" {
		cfg.Run.Name, cfg.Run.Resume = r, true
	}
	if cfg.Run.Resume {
		name, dir := cfg.Run.Name, cfg.Run.Dir
		run := trainer.RunDir(cfg)
		// Before anything is built or written (a log, an index): a run
		// without a checkpoint cannot be resumed.
		ck, _, err := trainer.FindCheckpoint(run)
		if err != nil {
			return cfg, fmt.Errorf("resume %s: %w", name, err)
		}
		if ck == "" {
			return cfg, fmt.Errorf("resume %s: %s has no checkpoint to resume from (nothing was started)", name, run)
		}
		saved := filepath.Join(run, "config.yaml")
		base, err := config.Load(saved)
		switch {
		case err == nil:
			cfg = base
			if err := config.ApplyFlags(c, &cfg); err != nil {
				return cfg, err
			}
			cfg.Run.Name, cfg.Run.Dir, cfg.Run.Resume = name, dir, true
			if bad := cfg.ResumeConflicts(base); len(bad) > 0 {
				return cfg, fmt.Errorf("resume %s: a resumed run cannot change %s (the checkpoint fixes them; %s keeps the run's values): "+
					"start a new run to change them", name, strings.Join(bad, ", "), saved)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return cfg, fmt.Errorf("resume %s: %w", name, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// printResults prints the final table: exact match per hop count and on
// average, per method.
func printResults(w *os.File, r *trainer.Results) {
	fmt.Fprintf(w, "\nResults (exact match on the evaluation split):\n\n%-18s", "method")
	for _, h := range r.Hops {
		fmt.Fprintf(w, " %8s", fmt.Sprintf("%d-hop", h))
	}
	fmt.Fprintf(w, " %8s %8s\n", "EM", "F1")
	for _, m := range r.Methods {
		mm := r.Metrics[m]
		fmt.Fprintf(w, "%-18s", m)
		for _, h := range r.Hops {
			fmt.Fprintf(w, " %8.3f", mm[metric.EMHop(h)])
		}
		fmt.Fprintf(w, " %8.3f %8.3f\n", mm[metric.EM], mm[metric.F1])
	}
}

func dryRun(c *cli.Context, cfg config.Config) error {
	r, err := trainer.DryRun(c.Context, cfg)
	if err != nil {
		return err
	}
	gb := func(b int64) string { return fmt.Sprintf("%.2f GB", float64(b)/1e9) }
	fmt.Printf("data:      %d training and %d evaluation questions\n", r.TrainTasks, r.EvalTasks)
	fmt.Printf("index:     %s (%d passages)\n", r.IndexPath, r.Passages)
	fmt.Printf("tools:     %s\n", strings.Join(r.Tools, ", "))
	fmt.Printf("tokenizer: %d tokens\n", r.Vocab)
	fmt.Printf("model:     %s, vocab %d, hidden %d, %d layers, %d heads (%d kv), %.1fM parameters\n",
		r.Model.ModelType, r.Model.Vocab, r.Model.Hidden, r.Model.Layers, r.Model.Heads, r.Model.KVHeads, float64(r.Params)/1e6)
	m := r.Memory
	parts := map[string]int64{"weights": m.Weights, "grads": m.Grads, "optimizer": m.Optimizer, "reference": m.Reference,
		"critic": m.Critic, "kv cache": m.KVCache, "activations": m.Activations}
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Printf("memory:    ~%s on %s (", gb(m.Total), cfg.Device.Device)
	for i, k := range keys {
		if i > 0 {
			fmt.Print(", ")
		}
		fmt.Printf("%s %s", k, gb(parts[k]))
	}
	fmt.Println(")")
	for _, w := range r.Warnings {
		fmt.Printf("warning:   %s\n", w)
	}
	fmt.Println("dry run: ok")
	return nil
}
